//! The receiver: validating and placing incoming segments, answering Read
//! Requests, and turning the first error into a Terminate.
//!
//! Segments are validated one by one, as DDP places them: a failing
//! segment places nothing and stops the stream (RFC 5041 §7.1, CHECKLIST
//! DDP-13), but earlier segments of the same message were valid and stay
//! placed — neither a tagged nor an untagged message announces its total
//! length before its last segment.

use super::access::{check_access, lookup, Right};
use super::cq::{Expected, Queue};
use super::fabric::{with_ddp_header, Fabric, ModelError, Side};
use super::qp::Receiving;
use super::rnic::{sq_cqe, terminated_read_status, ErrorCause};
use super::wire::tagged_ulpdus;
use crate::ddp::DdpHeader;
use crate::host::context::{stag_index, MrContext, QpState, TermInfo};
use crate::host::desc::{Cqe, CqeOpcode, CqeStatus};
use crate::rdmap::{parse_ulpdu, Opcode, RdmapHeader, Segment, QN_READ_ATOMIC_REQUEST};
use crate::terminate::{TermCode, Terminate};

/// A validation failure: the Terminate to send and the completion status
/// of the receive the failing Send had claimed (FLUSHED when none).
struct Fault {
    terminate: Terminate,
    claimed: CqeStatus,
}

/// What processing a segment gives: a harness error (outer), or a protocol
/// fault that ends the stream (inner).
type Rx = Result<Result<(), Fault>, ModelError>;

impl Fault {
    /// A failure reported with the offending segment's DDP header.
    fn segment(code: TermCode, ulpdu: &[u8]) -> Self {
        Fault {
            terminate: with_ddp_header(Terminate::new(code), ulpdu),
            claimed: CqeStatus::Flushed,
        }
    }

    /// Sets the status of the claimed receive.
    fn claimed(mut self, status: CqeStatus) -> Self {
        self.claimed = status;
        self
    }
}

/// Checks the STag a Send with Invalidate names (RFC 5040 §5.3, §7.2
/// items 4–5; CHECKLIST RDMAP-12): it must name a valid MR (else
/// `0/1/0x00`) associated with this stream, i.e. of the QP's PD (else
/// `0/1/0x09`, STag cannot be Invalidated).
fn check_invalidate(mrs: &[MrContext], pd: u16, stag: u32) -> Result<(), TermCode> {
    let mr = lookup(mrs, stag).ok_or(TermCode::RDMA_PROT_INVALID_STAG)?;
    if mr.pd != pd {
        return Err(TermCode::RDMA_PROT_CANNOT_INVALIDATE);
    }
    Ok(())
}

impl Fabric {
    /// Processes one ULPDU arriving at QP `qpn` of `side`. A QP that is not
    /// in RTS drops everything (after an error DDP drops silently).
    pub(crate) fn receive(&mut self, side: Side, qpn: u32, ulpdu: &[u8]) -> Result<(), ModelError> {
        let rts = self
            .rnic(side)
            .qp(qpn)
            .is_some_and(|qp| qp.ctx.state == QpState::Rts);
        if !rts {
            return Ok(());
        }
        let result = match parse_ulpdu(ulpdu) {
            Err(e) => Err(Fault::segment(e.term_code(), ulpdu)),
            Ok(seg) => match seg.opcode {
                Opcode::Send
                | Opcode::SendInvalidate
                | Opcode::SendSolicited
                | Opcode::SendSolicitedInvalidate => self.rx_send(side, qpn, &seg, ulpdu)?,
                Opcode::RdmaWrite => self.rx_write(side, qpn, &seg, ulpdu)?,
                Opcode::ReadRequest => self.rx_read_request(side, qpn, &seg, ulpdu)?,
                Opcode::ReadResponse => self.rx_read_response(side, qpn, &seg, ulpdu)?,
                Opcode::Terminate => {
                    self.rx_terminate(side, qpn, &seg);
                    Ok(())
                }
                // Without RFC 7306 support these opcodes are reserved (CHECKLIST RDMAP-03).
                Opcode::ImmediateData
                | Opcode::ImmediateDataSolicited
                | Opcode::AtomicRequest
                | Opcode::AtomicResponse => {
                    Err(Fault::segment(TermCode::RDMA_OP_UNEXPECTED_OPCODE, ulpdu))
                }
            },
        };
        if let Err(fault) = result {
            self.send_terminate(side, qpn, fault.terminate);
            let cause = ErrorCause {
                racy: true,
                read: None,
                receiving: fault.claimed,
            };
            self.rnics[side.index()].enter_error(qpn, cause);
        }
        Ok(())
    }

    /// A Send segment (QN 0). Checks, in order: MSN (`1/2/0x03`), a posted
    /// receive for a new message (`1/2/0x02`), MO (`1/2/0x04`), the
    /// Invalidate STag on the first segment (RDMAP-12), length against the
    /// receive buffer (`1/2/0x05`), and the receive buffer's own MR
    /// (lkey, PD, LOCAL_WRITE, bounds: `1/0/0x00`). The message is
    /// delivered with its last segment: the named MR is invalidated, then
    /// the receive completes.
    fn rx_send(&mut self, side: Side, qpn: u32, seg: &Segment, ulpdu: &[u8]) -> Rx {
        let DdpHeader::Untagged(h) = seg.ddp else {
            return Ok(Ok(()));
        };
        let fault = |code| Fault::segment(code, ulpdu);
        let rnic = &mut self.rnics[side.index()];
        let qp = &mut rnic.qps[qpn as usize];
        let inv_stag = seg.invalidate_stag();
        let mut r = match qp.receiving {
            Some(r) if h.msn != r.msn => {
                return Ok(Err(
                    fault(TermCode::DDP_UNTAGGED_MSN_RANGE).claimed(CqeStatus::RemoteOperation)
                ))
            }
            Some(r) if h.mo != r.placed => {
                return Ok(Err(
                    fault(TermCode::DDP_UNTAGGED_INVALID_MO).claimed(CqeStatus::RemoteOperation)
                ))
            }
            Some(r) => r,
            None => {
                if h.msn != qp.msn.recv {
                    return Ok(Err(fault(TermCode::DDP_UNTAGGED_MSN_RANGE)));
                }
                let Some(wqe) = qp.rq.pop_front() else {
                    return Ok(Err(fault(TermCode::DDP_UNTAGGED_NO_BUFFER)));
                };
                let r = Receiving {
                    wqe,
                    msn: h.msn,
                    placed: 0,
                };
                qp.receiving = Some(r);
                if h.mo != 0 {
                    return Ok(Err(fault(TermCode::DDP_UNTAGGED_INVALID_MO)
                        .claimed(CqeStatus::RemoteOperation)));
                }
                if let Some(stag) = inv_stag {
                    if let Err(code) = check_invalidate(&rnic.mrs, qp.ctx.pd, stag) {
                        return Ok(Err(fault(code).claimed(CqeStatus::RemoteAccess)));
                    }
                }
                r
            }
        };
        let len = seg.payload.len() as u64;
        if u64::from(h.mo) + len > u64::from(r.wqe.length) {
            return Ok(Err(
                fault(TermCode::DDP_UNTAGGED_TOO_LONG).claimed(CqeStatus::LocalLength)
            ));
        }
        if len > 0 {
            let to = r.wqe.addr.checked_add(u64::from(h.mo));
            let iova = to.and_then(|to| {
                check_access(&rnic.mrs, qp.ctx.pd, r.wqe.lkey, to, len, Right::LocalWrite).ok()
            });
            let Some(iova) = iova else {
                // The fault is this RNIC's own buffer: DDP Local Catastrophic, no headers.
                return Ok(Err(Fault {
                    terminate: Terminate::new(TermCode::DDP_LOCAL_CATASTROPHIC),
                    claimed: CqeStatus::LocalProtection,
                }));
            };
            rnic.mem.write(iova, seg.payload)?;
        }
        r.placed += len as u32;
        if !h.last {
            qp.receiving = Some(r);
            return Ok(Ok(()));
        }
        qp.receiving = None;
        qp.msn.recv = qp.msn.recv.wrapping_add(1);
        qp.status.rq_ci = qp.status.rq_ci.wrapping_add(1);
        if let Some(stag) = inv_stag {
            if let Some(mr) = rnic.mrs.get_mut(stag_index(stag) as usize) {
                mr.valid = false;
            }
        }
        let mut cqe = Cqe::new(r.wqe.wr_id, qpn as u16, CqeOpcode::Recv, CqeStatus::Success);
        cqe.byte_len = r.placed;
        cqe.solicited = seg.opcode.is_solicited();
        cqe.invalidated = inv_stag;
        rnic.complete(qpn, Queue::Recv, Expected::Exact(cqe));
        Ok(Ok(()))
    }

    /// An RDMA Write segment: placed after the tagged checks (DDP-12); a
    /// zero-length segment is not checked at all (DDP-09).
    fn rx_write(&mut self, side: Side, qpn: u32, seg: &Segment, ulpdu: &[u8]) -> Rx {
        let DdpHeader::Tagged(h) = seg.ddp else {
            return Ok(Ok(()));
        };
        if seg.payload.is_empty() {
            return Ok(Ok(()));
        }
        let rnic = &mut self.rnics[side.index()];
        let pd = rnic.qps[qpn as usize].ctx.pd;
        let len = seg.payload.len() as u64;
        match check_access(&rnic.mrs, pd, h.stag, h.to, len, Right::RemoteWrite) {
            Err(e) => Ok(Err(Fault::segment(e.ddp_term_code(), ulpdu))),
            Ok(iova) => {
                rnic.mem.write(iova, seg.payload)?;
                Ok(Ok(()))
            }
        }
    }

    /// A Read Request (QN 1): MSN (`1/2/0x03`), an IRD slot (`1/2/0x02`;
    /// the model runs one Read at a time, so only IRD 0 has none), then for
    /// a non-zero size the source checks (RDMAP-08, with the Read Request
    /// header in the Terminate). The response reads the source now and is
    /// segmented at this QP's MULPDU; a zero-length Read is answered with
    /// one empty Read Response to the sink STag and TO, unchecked.
    fn rx_read_request(&mut self, side: Side, qpn: u32, seg: &Segment, ulpdu: &[u8]) -> Rx {
        let (DdpHeader::Untagged(h), RdmapHeader::ReadRequest(rr)) = (seg.ddp, seg.header) else {
            return Ok(Ok(()));
        };
        let rnic = &mut self.rnics[side.index()];
        let qp = &mut rnic.qps[qpn as usize];
        if h.msn != qp.msn.read_request_recv {
            return Ok(Err(Fault::segment(TermCode::DDP_UNTAGGED_MSN_RANGE, ulpdu)));
        }
        if qp.ctx.ird == 0 {
            return Ok(Err(Fault::segment(TermCode::DDP_UNTAGGED_NO_BUFFER, ulpdu)));
        }
        qp.msn.read_request_recv = h.msn.wrapping_add(1);
        let (pd, mulpdu) = (qp.ctx.pd, qp.ctx.mulpdu);
        let data = if rr.size == 0 {
            Vec::new()
        } else {
            match check_access(
                &rnic.mrs,
                pd,
                rr.src_stag,
                rr.src_to,
                rr.size.into(),
                Right::RemoteRead,
            ) {
                Err(e) => {
                    let mut f = Fault::segment(e.rdma_term_code(), ulpdu);
                    f.terminate = f.terminate.with_rdma(rr);
                    return Ok(Err(f));
                }
                Ok(iova) => rnic.mem.read(iova, rr.size as usize)?.to_vec(),
            }
        };
        for u in tagged_ulpdus(
            Opcode::ReadResponse,
            rr.sink_stag,
            rr.sink_to,
            &data,
            mulpdu,
        ) {
            self.transmit(side, qpn, u);
        }
        Ok(Ok(()))
    }

    /// A Read Response segment: it must continue the oldest outstanding
    /// Read (else `0/2/0x06`) at its sink STag (`1/1/0x00`) and next TO
    /// within the size (`1/1/0x01`), and the sink MR must still allow the
    /// write; the last segment must end at the size (`0/2/0xFF`). The Read
    /// completes with the last segment.
    fn rx_read_response(&mut self, side: Side, qpn: u32, seg: &Segment, ulpdu: &[u8]) -> Rx {
        let DdpHeader::Tagged(h) = seg.ddp else {
            return Ok(Ok(()));
        };
        let fault = |code| Ok(Err(Fault::segment(code, ulpdu)));
        let rnic = &mut self.rnics[side.index()];
        let qp = &mut rnic.qps[qpn as usize];
        let Some(mut read) = qp.reads.front().copied() else {
            return fault(TermCode::RDMA_OP_UNEXPECTED_OPCODE);
        };
        let len = seg.payload.len() as u64;
        if len > 0 {
            let rr = read.request;
            if h.stag != rr.sink_stag {
                return fault(TermCode::DDP_TAGGED_INVALID_STAG);
            }
            let next_to = rr.sink_to.wrapping_add(read.placed.into());
            if h.to != next_to || u64::from(read.placed) + len > u64::from(rr.size) {
                return fault(TermCode::DDP_TAGGED_BASE_BOUNDS);
            }
            match check_access(&rnic.mrs, qp.ctx.pd, h.stag, h.to, len, Right::LocalWrite) {
                Err(e) => return fault(e.ddp_term_code()),
                Ok(iova) => rnic.mem.write(iova, seg.payload)?,
            }
            read.placed += len as u32;
        }
        if !h.last {
            if let Some(r) = qp.reads.front_mut() {
                *r = read;
            }
            return Ok(Ok(()));
        }
        if read.placed != read.request.size {
            return fault(TermCode::RDMA_OP_UNSPECIFIED);
        }
        qp.reads.pop_front();
        if read.wqe.signaled {
            let cqe = sq_cqe(qpn, &read.wqe, CqeStatus::Success);
            rnic.complete(qpn, Queue::Send, Expected::Exact(cqe));
        }
        Ok(Ok(()))
    }

    /// A Terminate from the peer: the QP enters ERROR. The outstanding Read
    /// its Terminated DDP Header names (QN 1, by MSN) completes with the
    /// status of [`terminated_read_status`]; the rest is flushed.
    fn rx_terminate(&mut self, side: Side, qpn: u32, seg: &Segment) {
        let RdmapHeader::Terminate(t) = seg.header else {
            return;
        };
        let named_read = t
            .ddp_header
            .and_then(|h| h.parse().ok())
            .and_then(|h| match h {
                DdpHeader::Untagged(u) if u.qn == QN_READ_ATOMIC_REQUEST => Some(u.msn),
                _ => None,
            });
        let rnic = &mut self.rnics[side.index()];
        rnic.qps[qpn as usize]
            .status
            .terminate
            .get_or_insert(TermInfo {
                code: t.code,
                received: true,
            });
        let cause = ErrorCause {
            racy: true,
            read: named_read.map(|msn| (msn, terminated_read_status(t.code))),
            receiving: CqeStatus::Flushed,
        };
        rnic.enter_error(qpn, cause);
    }
}
