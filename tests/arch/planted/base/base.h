/* base/base.h */
