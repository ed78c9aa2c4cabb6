//! A message-level reference model of RNIC semantics: what correct hardware
//! leaves behind once it is quiescent.
//!
//! There are no cycles here. A [`Fabric`] holds two [`Rnic`]s, each with its
//! host memory ([`HostMemory`], IOVA-contiguous regions), MR table, QPs and
//! CQs, programmed with the same commands as BAR0 ([`Rnic::command`], or
//! the typed [`Rnic::write_qp`] and friends). A test connects QPs one to
//! one, posts [`SqWqe`](crate::host::SqWqe)s and
//! [`RqWqe`](crate::host::RqWqe)s, calls [`Fabric::run`], and compares the
//! hardware's end state with:
//!
//! * each RNIC's host memory ([`Rnic::mem`]; the data regions — the rings
//!   are the harness's business);
//! * each CQ's completions, per QP and queue ([`Cq::check`]);
//! * each QP's transmitted ULPDUs by class ([`Qp::tx`], [`TxLog::from_stream`]),
//!   segmented at MULPDU by [`wire`];
//! * QP states and Terminate codes ([`Qp::status`], QUERY_QP).
//!
//! # Schedule
//!
//! SQ WQEs execute one at a time in the order they were posted, across all
//! QPs of both RNICs. Everything a WQE causes — its segments at the peer, a
//! Read Response, a Terminate — is processed before the next WQE starts.
//! Receives posted before [`Fabric::run`] are all available to it, as when
//! a host posts its receives before ringing the SQ doorbells. Without errors
//! this is what pipelined hardware produces too, as long as the test
//! avoids races the RFCs leave open (a WQE reading a buffer an earlier Read
//! of the same QP is still filling needs FENCE; two QPs writing one buffer).
//!
//! # Completions
//!
//! * Send variants and RDMA Write: a SUCCESS CQE (if SIGNALED) once the last
//!   segment is handed on; `byte_len` = length.
//! * Immediate Data: a SUCCESS CQE (if SIGNALED, opcode SEND, `byte_len`
//!   8) once its one segment is handed on.
//! * RDMA Read: a SUCCESS CQE (if SIGNALED) once the last Read Response
//!   segment is placed.
//! * Atomic: a SUCCESS CQE (if SIGNALED, opcode ATOMIC, `byte_len` 8) once
//!   its Atomic Response is delivered and the original value is stored
//!   little-endian in the 8-octet local buffer (RFC 7306 §5.4, CHECKLIST
//!   ATOM-14). The target word is updated when the request is delivered.
//! * Receive: always a CQE when the Send's last segment is placed;
//!   `byte_len` = message length; SOLICITED for the SE variants; for the
//!   Invalidate variants INVALIDATED with the STag, which is invalid before
//!   the CQE is written.
//! * Receive of Immediate Data: always a RECV_IMM CQE, `byte_len` 8, `imm`
//!   the 8 octets in wire order (`imm.to_le_bytes()`), IMM_VALID, SOLICITED
//!   for opcode 0x9. The receive buffer is consumed but neither written nor
//!   checked.
//! * RDMA Write never completes at the target (RDMAP-06).
//! * Per QP, SQ completions are in WQE order and RQ completions in RQ order.
//! * Error completions always write a CQE (SIGNALED or not), with
//!   `byte_len` 0.
//!
//! MSNs start at 1 per queue and direction: QN 0 Sends and Immediate Data,
//! QN 1 Read Requests and Atomic Requests (one counter), QN 2 the
//! Terminate, QN 3 Atomic Responses. An Atomic Request's Request Identifier
//! counts the QP's Atomic Requests from 1, so it equals the QN 3 MSN of its
//! response. Zero-length Sends, Writes and Read Responses are one segment
//! with L = 1; a zero-length Send consumes a receive (DDP-09, RDMAP-11); a
//! zero-length Write or Read is not validated at all. Immediate Data and
//! the atomic messages are always one segment.
//!
//! # Validation and errors
//!
//! The requester checks each WQE before sending it: a supported opcode
//! (else BAD_OPCODE; WRITE_IMM is not one), then its local buffer — else
//! LOCAL_PROTECTION: for a non-zero length the lkey (valid, same key, same
//! PD, in bounds, no wrap; LOCAL_WRITE for a Read sink); for ATOMIC always
//! 8 octets at `local_addr` with LOCAL_WRITE, whatever `length` says;
//! Immediate Data has no local buffer. A Read or atomic then needs an ORD
//! slot. A local failure completes the WQE with that status, replaces it on
//! the wire with a Terminate `0/0/0x00` (RFC 5040 §7.1 case 1: Local
//! Catastrophic, no headers), moves the QP to ERROR and flushes everything
//! after it. An ATOMIC sends its AOpCode unchanged (even an unsupported
//! one); a FetchAdd sends Compare Data 0 and Compare Mask all ones whatever
//! the WQE holds (CHECKLIST ATOM-03).
//!
//! The responder validates each segment before placing it:
//!
//! | message | check (in order) | Terminate | claimed receive |
//! |---|---|---|---|
//! | any | parse ([`parse_ulpdu`](crate::rdmap::parse_ulpdu)): DV, QN, RV, opcode, T/QN, header size | its `term_code()` | – |
//! | Send | MSN is the expected one | `1/2/0x03` | – |
//! | Send | a receive is posted (first segment) | `1/2/0x02` | – |
//! | Send | MO continues the message | `1/2/0x04` | REMOTE_OPERATION |
//! | Send w/ Inv | Invalidate STag valid (every segment) | `0/1/0x00` | REMOTE_ACCESS |
//! | Send w/ Inv | … of this QP's PD | `0/1/0x09` | REMOTE_ACCESS |
//! | Send | MO + length ≤ receive length | `1/2/0x05` | LOCAL_LENGTH |
//! | Send | receive buffer: lkey, PD, LOCAL_WRITE, bounds | `1/0/0x00`, no headers | LOCAL_PROTECTION |
//! | Write | STag valid / PD / REMOTE_WRITE / TO wrap / bounds | `1/1/0x00` / `0x02` / `0x00` / `0x03` / `0x01` | – |
//! | Read Request | MSN; an IRD slot (IRD ≠ 0) | `1/2/0x03`; `1/2/0x02` | – |
//! | Read Request | source STag valid / PD / REMOTE_READ / TO wrap / bounds | `0/1/0x00` / `0x03` / `0x02` / `0x04` / `0x01`, with the Read Request header | – |
//! | Read Response | continues the oldest outstanding Read: exists (and is older than any atomic) / sink STag / TO within the size; sink MR still writable; the last segment ends at the size | `0/2/0x06` / `1/1/0x00` / `1/1/0x01`; DDP-12 codes; `0/2/0xFF` | – |
//! | Immediate Data | no Send is half received | `1/2/0x03` | REMOTE_OPERATION |
//! | Immediate Data | MSN is the expected one | `1/2/0x03` | – |
//! | Immediate Data | a receive is posted | `1/2/0x02` | – |
//! | Immediate Data | exactly 8 octets in one segment (L = 1, MO = 0) | `0/2/0xFF` | – |
//! | Atomic Request | MSN (shared with Read Requests); an IRD slot (IRD ≠ 0) | `1/2/0x03`; `1/2/0x02` | – |
//! | Atomic Request | AOpCode 0 (FetchAdd) or 2 (CmpSwap) | `0/2/0x06` | – |
//! | Atomic Request | target STag valid / PD / REMOTE_ATOMIC / TO wrap / bounds of the 8 octets | `0/1/0x00` / `0x03` / `0x02` / `0x04` / `0x01` | – |
//! | Atomic Request | the target's IOVA is 8-aligned | `0/2/0x07` | – |
//! | Atomic Response | QN 3 MSN is the expected one | `1/2/0x03` | – |
//! | Atomic Response | the oldest outstanding Read or atomic is an atomic with this Request Identifier | `0/2/0xFF` | – |
//! | Atomic Response | the local buffer still valid / PD / LOCAL_WRITE / wrap / bounds | `1/1/0x00` / `0x02` / `0x00` / `0x03` / `0x01` | – |
//!
//! Terminates carry the failing segment's DDP header and its ULPDU length
//! (M = D = 1) except where noted; the Atomic Request failures carry no
//! RDMA header (RFC 7306 §8.1 item 2), unlike the Read Request ones. The
//! failing segment and everything after it is not placed; earlier segments
//! of the same message were valid and stay placed (DDP validates segment
//! by segment).
//!
//! Immediate Data of the wrong length (7 or 9 octets, or a last segment
//! not ending at 8) already fails the parse with `0/2/0xFF`, as do an
//! Atomic Request ULPDU of other than 70 octets and an Atomic Response of
//! other than 30. An Atomic Request is checked completely before the
//! target is read: a refused one leaves memory unchanged and sends no
//! response.
//!
//! The QP that found the error sends the Terminate (QN 2, MSN 1) and
//! enters ERROR; the peer enters ERROR when the Terminate arrives. A QP in
//! ERROR drops every incoming segment, including a second Terminate.
//!
//! Entering ERROR completes, in order: outstanding Reads and atomics
//! (FLUSHED, except the one a received Terminate names by its QN 1 MSN,
//! which gets [`terminated_read_status`]: REMOTE_ACCESS for protection and
//! tagged buffer errors, REMOTE_OPERATION for operation and untagged
//! buffer errors, TERMINATED otherwise), the SQ WQEs not yet taken
//! (FLUSHED), the receive a Send in progress claimed (the status in the
//! table above), and the remaining receives (FLUSHED). Work posted later is FLUSHED at
//! the next [`Fabric::run`]. Writing ERROR with WRITE_QP flushes the same
//! way and sends no Terminate.
//!
//! # Timing-dependent outcomes
//!
//! When an error comes from the peer's direction (an incoming segment
//! failed, or a Terminate arrived), hardware may already have transmitted
//! some of the SQ WQEs the model flushes. Those completions are
//! [`Expected::FlushedOrSent`]: a Send, Write or Immediate Data is FLUSHED
//! or completes as sent (SUCCESS if SIGNALED, no CQE otherwise); a Read or
//! atomic is FLUSHED either way, because the peer drops its request or the
//! QP drops its response. [`Cq::check`] accepts either. The peer's effects
//! of such transmissions (data placed, receives consumed on its side) are
//! not predicted: keep the direction opposite to a failing message idle in
//! error tests. Likewise a local error races any Read or atomic of the same QP still in flight in
//! hardware; post the failing WQE after a run that completed it.
//!
//! # Not modelled
//!
//! MPA framing (the model works on ULPDUs), CQ overflow and interrupts
//! (the host's consumer index is not modelled), FENCE, and IRD/ORD beyond
//! zero: one Read or atomic runs at a time, so only `ird == 0` refuses a
//! request (`1/2/0x02`) and `ord == 0` stalls the SQ at its first Read or
//! atomic; atomicity across QPs (ATOM-12) holds trivially. DDP's freedom to
//! place out of order is not used: segments arrive in order, so an MSN or
//! MO out of sequence is an error. FEATURES is only reported: atomics and
//! Immediate Data run whatever it says.
//!
//! # Deviations
//!
//! An 8-octet Immediate Data message split into several segments is
//! refused with `0/2/0xFF`, although CHECKLIST IMM-03 recommends accepting
//! it (DDP may segment any message; no sender does so for 26 octets).

pub mod access;
pub mod cq;
pub mod fabric;
pub mod memory;
pub mod qp;
mod requester;
mod responder;
pub mod rnic;
pub mod wire;

pub use access::{check_access, AccessError, Right};
pub use cq::{Cq, CqMismatch, Expected, Queue};
pub use fabric::{Fabric, ModelError, Side};
pub use memory::{HostMemory, MemoryError};
pub use qp::{Msns, Qp};
pub use rnic::{local_outcome, sq_cqe, terminated_read_status, Outcome, Rnic, RnicConfig};
pub use wire::{TxClass, TxLog};
