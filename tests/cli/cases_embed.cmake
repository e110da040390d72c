# Golden cases of `fdlink embed`.
