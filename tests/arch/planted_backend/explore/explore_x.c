/* explore calling a backend's API directly: reported */
static int x(void) { return cov_npu_compile(0, 0) != 0; }
