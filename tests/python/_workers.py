"""Functions run in worker processes by test_errors_travel (importable without conftest)."""

import fdlink


def bad_declarations(text):
    """Raises fdlink.ParseError for @text."""
    fdlink.Library(text, [], arch="sm_90")


def device_status(record):
    """Raises the fdlink exception of @record."""
    from fdlink._errors import from_record

    raise from_record(record)
