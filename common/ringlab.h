/* ringlab.h — the one header a lab includes: runtime, tensors, communicators, streams,
 * cost model, trace. */
#ifndef RINGLAB_H
#define RINGLAB_H
#include "bf16.h"
#include "comm.h"
#include "cost.h"
#include "dtype.h"
#include "err.h"
#include "fault.h"
#include "launch.h"
#include "mem.h"
#include "rng.h"
#include "stream.h"
#include "tensor.h"
#include "trace.h"
#endif
