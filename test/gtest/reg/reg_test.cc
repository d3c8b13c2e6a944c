/**
 * gpumem tests: helpers of the registration tests.
 *
 * See file LICENSE for terms.
 */

#include "reg_test.h"

extern "C" {
#include <ucs/debug/log_def.h>
}

#include <cstring>
#include <errno.h>


namespace gpumem_test {

const gpumem_reg_ops_t table_driver::ops = {
    table_driver::mr_register,
    table_driver::mr_deregister
};

table_driver::table_driver() :
    num_register_calls(0), num_deregister_calls(0), register_errno(0),
    dereg_refusals(0), m_next_key(table_driver::first_lkey)
{
}

ucs_status_t table_driver::mr_register(void *arg,
                                       const gpumem_reg_params_t *params,
                                       gpumem_reg_mr_t *mr_p)
{
    table_driver *self = static_cast<table_driver*>(arg);

    ++self->num_register_calls;
    if (self->register_errno != 0) {
        ucs_log(params->log_level, "table driver: refused: %s",
                strerror(self->register_errno));
        return gpumem_reg_status_from_errno(self->register_errno);
    }

    mr_p->handle = NULL;
    mr_p->lkey   = self->m_next_key++;
    mr_p->rkey   = mr_p->lkey ^ table_driver::rkey_mask;
    if (params->memory.type == GPUMEM_REG_MEMORY_HOST) {
        mr_p->address      = (uintptr_t)params->memory.host.address;
        mr_p->host_address = params->memory.host.address;
    } else {
        mr_p->address      = params->memory.dmabuf.iova;
        mr_p->host_address = params->memory.dmabuf.host_address;
    }

    self->registered[mr_p->lkey] = *params;
    return UCS_OK;
}

ucs_status_t table_driver::mr_deregister(void *arg, const gpumem_reg_mr_t *mr)
{
    table_driver *self = static_cast<table_driver*>(arg);

    ++self->num_deregister_calls;
    if (self->dereg_refusals > 0) {
        --self->dereg_refusals;
        ucs_error("table driver: deregistration of key 0x%x refused",
                  mr->lkey);
        return UCS_ERR_BUSY;
    }

    EXPECT_EQ(1u, self->registered.erase(mr->lkey))
            << "deregistered key 0x" << std::hex << mr->lkey
            << " twice or never registered";
    return UCS_OK;
}


gpumem_reg_params_t host_params(void *address, size_t length,
                                gpumem_reg_access_t access,
                                gpumem_reg_order_t order)
{
    gpumem_reg_params_t params;

    memset(&params, 0, sizeof(params));
    params.memory.type         = GPUMEM_REG_MEMORY_HOST;
    params.memory.host.address = address;
    params.memory.host.length  = length;
    params.access              = access;
    params.order               = order;
    params.log_level           = UCS_LOG_LEVEL_ERROR;
    return params;
}

gpumem_reg_params_t dmabuf_params(int fd, int64_t offset, int64_t bytes,
                                  uint64_t iova, void *host_address,
                                  gpumem_reg_access_t access)
{
    gpumem_reg_params_t params;

    memset(&params, 0, sizeof(params));
    params.memory.type                = GPUMEM_REG_MEMORY_DMABUF;
    params.memory.dmabuf.fd           = fd;
    params.memory.dmabuf.offset       = offset;
    params.memory.dmabuf.bytes        = bytes;
    params.memory.dmabuf.iova         = iova;
    params.memory.dmabuf.host_address = host_address;
    params.access                     = access;
    params.order                      = GPUMEM_REG_ORDER_IN_ORDER;
    params.log_level                  = UCS_LOG_LEVEL_ERROR;
    return params;
}

}
