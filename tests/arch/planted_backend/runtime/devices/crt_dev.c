/* planted: a device layer of the runtime is backend code: nothing reported */
static const char *const k_name = "npu-sim";
int crt_dev_sim(void) { return cov_npu_sim_run(k_name); }
