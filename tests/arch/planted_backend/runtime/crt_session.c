/* planted: the rest of the runtime names no backend */
int crt_open(const char *b) { return b[0] == 'n' && !strcmp(b, "nvptx"); }
