// The C ABI of rnic_model.h over the generated RnicModel subclasses.
#include "rnic_model.h"

static thread_local uint64_t reset_seed = 0;

void rnic_seed_random_reset(VerilatedContext* context) {
    if (reset_seed != 0) {
        context->randReset(2);
        context->randSeed(static_cast<int>(reset_seed & 0x7fffffff));
    }
}

static RnicModel* of(RnicModelHandle* h) { return reinterpret_cast<RnicModel*>(h); }
static const RnicModel* of(const RnicModelHandle* h) { return reinterpret_cast<const RnicModel*>(h); }

extern "C" {

RnicModelHandle* rnic_model_new(const char* name) {
    return reinterpret_cast<RnicModelHandle*>(rnic_create_model(name));
}

void rnic_model_free(RnicModelHandle* model) {
    if (!model) return;
    of(model)->final_();
    delete of(model);
}

size_t rnic_model_port_count(const RnicModelHandle* model) { return of(model)->port_count; }

const char* rnic_model_port_name(const RnicModelHandle* model, size_t index) {
    return index < of(model)->port_count ? of(model)->ports[index].name : nullptr;
}

uint32_t rnic_model_port_width(const RnicModelHandle* model, size_t index) {
    return index < of(model)->port_count ? of(model)->ports[index].width : 0;
}

int rnic_model_port_is_output(const RnicModelHandle* model, size_t index) {
    return index < of(model)->port_count ? of(model)->ports[index].is_output : 0;
}

void* rnic_model_port_storage(RnicModelHandle* model, size_t index) {
    return index < of(model)->port_count ? of(model)->ports[index].storage : nullptr;
}

void rnic_model_eval(RnicModelHandle* model) { of(model)->eval(); }

int rnic_model_trace_open(RnicModelHandle* model, const char* path) {
    return of(model)->trace_open(path);
}

void rnic_model_trace_dump(RnicModelHandle* model, uint64_t time) { of(model)->trace_dump(time); }

void rnic_model_trace_flush(RnicModelHandle* model) { of(model)->trace_flush(); }

void rnic_model_trace_close(RnicModelHandle* model) { of(model)->trace_close(); }

void rnic_model_set_reset_seed(uint64_t seed) { reset_seed = seed; }
}
