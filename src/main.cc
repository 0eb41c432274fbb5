// stallscope: the thin main. Everything lives in the library (src/cli/).
#include "cli/commands.h"

int main(int argc, char** argv) { return stallscope::RunCli(argc, argv); }
