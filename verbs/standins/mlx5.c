/* libmlx5.so.1 stand-in: the mlx5 direct verbs perftest binds, for no device. */
#include <errno.h>
#include <stddef.h>

#define NONE(name) void *name(void) { errno = EOPNOTSUPP; return NULL; }
#define FAIL(name) int name(void) { return EOPNOTSUPP; }

NONE(mlx5dv_open_device)
NONE(mlx5dv_create_qp)
NONE(mlx5dv_qp_ex_from_ibv_qp_ex)
NONE(mlx5dv_create_mkey)
NONE(mlx5dv_dek_create)
FAIL(mlx5dv_devx_general_cmd)
FAIL(mlx5dv_destroy_mkey)
FAIL(mlx5dv_dek_destroy)
FAIL(mlx5dv_crypto_login)
