/* an allowed violation, and a stale allow-list entry below */
static int x(void) { return cov_npu_compile(0, 0) != 0; }
