/* libefa.so.1 stand-in: the EFA direct verbs perftest binds, for no device. */
#include <errno.h>
#include <stddef.h>

int efadv_query_device(void) { return EOPNOTSUPP; }
void *efadv_create_qp_ex(void) { errno = EOPNOTSUPP; return NULL; }
