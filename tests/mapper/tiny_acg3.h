/* tests/mapper/tiny_acg3.h: the three-level test ACG the mapper's search
 * and step tests share (small capacities, so tiling decisions show). */
#ifndef COV_TESTS_MAPPER_TINY_ACG3_H
#define COV_TESTS_MAPPER_TINY_ACG3_H

/* Three levels (dram, buf, acc), every on-chip level double-buffered,
 * partial sums can go back from buf into acc, small capacities. */
static const char k_acg3[] =
    "{\"acg_version\": 1, \"name\": \"npu-tiny3\", \"clock_mhz\": 1000,"
    " \"backend\": {\"name\": \"npu-sim\"},"
    " \"storage\": [{\"name\": \"dram\", \"kind\": \"dram\", \"capacity\": \"1GiB\","
    "   \"bandwidth_bytes_per_cycle\": 8},"
    "  {\"name\": \"buf\", \"kind\": \"scratchpad\", \"capacity\": \"1KiB\", \"double_buffer\": true},"
    "  {\"name\": \"acc\", \"kind\": \"regfile\", \"capacity\": \"128B\", \"double_buffer\": true}],"
    " \"compute\": [{\"name\": \"pe\", \"kind\": \"systolic\", \"dims\": [4, 4],"
    "  \"capabilities\": [{\"op\": \"mac\", \"in\": [\"f32\", \"f32\"], \"out\": \"f32\","
    "   \"tile\": [4, 4, 1], \"throughput\": 16, \"latency\": 6}]},"
    "  {\"name\": \"vec\", \"kind\": \"simd\", \"lanes\": 4,"
    "   \"capabilities\": [{\"op\": [\"add\", \"sub\", \"mul\", \"max\", \"relu\", \"copy\", \"mac\","
    "    \"div\", \"exp\", \"erf\", \"tanh\"], \"in\": \"f32\", \"out\": \"f32\", \"throughput\": 4}]}],"
    " \"edges\": [{\"from\": \"dram\", \"to\": \"buf\", \"bandwidth_bytes_per_cycle\": 8,"
    "   \"latency_cycles\": 20, \"bidirectional\": true},"
    "  {\"from\": \"buf\", \"to\": \"pe\", \"bandwidth_bytes_per_cycle\": 16, \"latency_cycles\": 1},"
    "  {\"from\": \"pe\", \"to\": \"acc\", \"bandwidth_bytes_per_cycle\": 64, \"bidirectional\": true},"
    "  {\"from\": \"acc\", \"to\": \"buf\", \"bandwidth_bytes_per_cycle\": 16, \"latency_cycles\": 2,"
    "   \"bidirectional\": true},"
    "  {\"from\": \"buf\", \"to\": \"vec\", \"bandwidth_bytes_per_cycle\": 16, \"bidirectional\": true}]}";

#endif
