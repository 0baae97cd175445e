/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file seq.h
 * Forwarding header: sequence arithmetic lives in util/seq.h (one place for
 * every wrapping counter).  Kept so that "proto/seq.h" includes still build;
 * new code includes "util/seq.h".
 */
#ifndef EM_PROTO_SEQ_H
#define EM_PROTO_SEQ_H

#include "util/seq.h"

#endif
