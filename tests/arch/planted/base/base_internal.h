/* base/base_internal.h */
