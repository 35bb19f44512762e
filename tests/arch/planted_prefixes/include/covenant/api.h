/* the public API of the planted tree */
int cov_public_call(void);
