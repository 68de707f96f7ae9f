/* reconciler/main.c: placeholder for seckill-reconciler so the tree links. It loads the
 * shared configuration (so --help, --version and --print-config work) and exits.
 * The real reconciliation pass (DESIGN.md 8) replaces this file. */
#include <stdio.h>

#include "sk/conf.h"

int main(int argc, char **argv)
{
        sk_conf_t conf;
        int argi = 0;
        int rc = sk_conf_load(&conf, argc, argv, "seckill-reconciler", NULL, NULL, 0, &argi);

        if (rc == 1)
                return 0;       /* help, version or config printed */
        if (rc != 0)
                return 2;       /* invalid configuration, already reported */
        fprintf(stderr, "seckill-reconciler: not implemented yet\n");
        return 0;
}
