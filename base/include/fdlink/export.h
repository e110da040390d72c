/**
 * @file fdlink/export.h
 * Symbol visibility for the fdlink library (shared and static builds).
 */
#ifndef FDLINK_EXPORT_H
#define FDLINK_EXPORT_H

#if defined(FDLINK_STATIC)
#  define FDL_API
#elif defined(_WIN32)
#  if defined(FDLINK_BUILDING)
#    define FDL_API __declspec(dllexport)
#  else
#    define FDL_API __declspec(dllimport)
#  endif
#elif defined(__GNUC__) && __GNUC__ >= 4
#  define FDL_API __attribute__((visibility("default")))
#else
#  define FDL_API
#endif

#endif /* FDLINK_EXPORT_H */
