/* covenant/api.h: COV_API marks every function of the public API.
 *
 * The library is compiled with -fvisibility=hidden, so libcovenant.so
 * exports exactly the declarations of include/covenant/ that carry this
 * marker and nothing of the modules' internals (tests/arch/exports.sh
 * checks it with nm -D). The static library is the same objects. */
#ifndef COVENANT_API_H
#define COVENANT_API_H

#if defined(__GNUC__) || defined(__clang__)
#define COV_API __attribute__((visibility("default")))
#else
#define COV_API
#endif

#endif
