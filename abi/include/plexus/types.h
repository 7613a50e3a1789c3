/*
 * Plexus: the types every Plexus header shares.
 *
 * The export macro, the status codes, the element types, the thread-local error message
 * and the version macros. The plugin headers (<plexus/collectives_plugin.h>,
 * <plexus/strategy_plugin.h>) include this header and nothing else of Plexus, so a plugin
 * compiles without the runtime's API; <plexus/plexus.h> includes it too. A plugin never
 * links libplexus: it returns these statuses but calls none of the functions declared here.
 *
 * Version history of this header: see the changelog in <plexus/plexus.h>.
 */
#ifndef PLEXUS_TYPES_H
#define PLEXUS_TYPES_H

#include <stddef.h>
#include <stdint.h>

#if defined(_WIN32)
#define PLX_API __declspec(dllexport)
#else
#define PLX_API __attribute__((visibility("default")))
#endif

/** Marks a declaration deprecated (a compiler warning at each use); `replacement` says what
 *  to call instead. Define PLX_NO_DEPRECATION_WARNINGS to silence it. */
#if defined(PLX_NO_DEPRECATION_WARNINGS)
#define PLX_DEPRECATED(replacement)
#elif defined(__GNUC__) || defined(__clang__)
#define PLX_DEPRECATED(replacement) __attribute__((deprecated("use " replacement)))
#else
#define PLX_DEPRECATED(replacement)
#endif

#ifdef __cplusplus
extern "C" {
#endif

/**
 * Version of the C API this header declares; compare with plx_version() at run time. Each
 * increment only adds (functions, struct fields at the end, enum values): a program built
 * against version v runs with a library of any version >= v. Until 1.0 the number counts
 * these minor versions; deprecated names are removed only at 1.0.
 */
#define PLX_API_VERSION 20

/** Largest tensor rank. */
#define PLX_MAX_RANK 8

/* ---- Status and errors ------------------------------------------------------------ */

/** Result of every fallible call. @since 1 */
typedef int32_t plx_status;
enum {
  PLX_OK = 0,
  PLX_ERR_INVALID_ARGUMENT = 1,  /**< NULL pointer, bad value, wrong buffer size, ... */
  PLX_ERR_UNKNOWN_OP = 2,        /**< no op registered under that name */
  PLX_ERR_SHAPE_MISMATCH = 3,    /**< shapes break an op's rule or a host array's shape */
  PLX_ERR_DTYPE_MISMATCH = 4,    /**< dtypes break an op's rule */
  PLX_ERR_NOT_FOUND = 5,         /**< id of a tensor, stream or device that does not exist */
  PLX_ERR_OUT_OF_DEVICE_MEMORY = 6, /**< the memory plan exceeds a device's capacity */
  PLX_ERR_INVALID_GROUPING = 7,  /**< a replica grouping does not fit the replication factor */
  PLX_ERR_IO = 8,                /**< a file could not be opened, read or written */
  PLX_ERR_BAD_FORMAT = 9,        /**< a file's content is not what its format requires */
  PLX_ERR_RUNTIME = 10,          /**< a kernel failed while running (e.g. label out of range) */
  PLX_ERR_PLUGIN = 11,           /**< a plugin is missing, incompatible or failed */
  PLX_ERR_TIMEOUT = 12,          /**< a collective or a worker did not answer within its limit */
  PLX_ERR_CANCELLED = 13,        /**< the operation was cancelled */
  PLX_ERR_UNSUPPORTED = 14,      /**< valid request this build or machine cannot serve */
  PLX_ERR_BUFFER_TOO_SMALL = 15, /**< an output buffer is too small; the size needed is returned */
  PLX_ERR_STILL_RUNNING = 16,    /**< plx_run_wait's limit passed before the run ended; the run goes on (since 17) */
  PLX_ERR_INTERNAL = 99          /**< a bug in Plexus; please report the message */
};

/**
 * Element type of a tensor. @since 1
 * PLX_DTYPE_FLOAT16 is IEEE 754 binary16 (kernels store it and compute in float32,
 * docs/ops.md); PLX_DTYPE_BOOL is one byte, 0 or 1 (a nonzero byte reads as true).
 * Host arrays hold elements of the same layout. FLOAT16, INT8, UINT32, BOOL: @since 19
 */
typedef int32_t plx_dtype;
enum {
  PLX_DTYPE_FLOAT32 = 1,
  PLX_DTYPE_INT32 = 2,
  PLX_DTYPE_UINT8 = 3,
  PLX_DTYPE_FLOAT16 = 4, /**< @since 19 */
  PLX_DTYPE_INT8 = 5,    /**< @since 19 */
  PLX_DTYPE_UINT32 = 6,  /**< @since 19 */
  PLX_DTYPE_BOOL = 7     /**< @since 19 */
};

/**
 * Message of the last failed call on this thread ("" when none failed yet).
 *
 * @return UTF-8 text owned by Plexus, valid until the next Plexus call on this thread.
 * Thread safety: safe; the message is per thread.
 * @since 1
 */
PLX_API const char* plx_last_error(void);

/**
 * Short name of a status ("PLX_ERR_SHAPE_MISMATCH"); "PLX_ERR_UNKNOWN_STATUS" for values
 * that are no plx_status.
 *
 * @param status Any value.
 * @return Static string. Never fails.
 * Thread safety: safe.
 * @since 1
 */
PLX_API const char* plx_status_name(plx_status status);

/**
 * PLX_API_VERSION of the library loaded at run time.
 *
 * @return The version. Never fails.
 * Thread safety: safe.
 * @since 1
 */
PLX_API uint32_t plx_version(void);

#ifdef __cplusplus
}
#endif

#endif /* PLEXUS_TYPES_H */
