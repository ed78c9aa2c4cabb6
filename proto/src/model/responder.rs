//! The receiver: validating and placing incoming segments, answering Read
//! and Atomic Requests, and turning the first error into a Terminate.
//!
//! Segments are validated one by one, as DDP places them: a failing
//! segment places nothing and stops the stream (RFC 5041 §7.1, CHECKLIST
//! DDP-13), but earlier segments of the same message were valid and stay
//! placed — neither a tagged nor an untagged message announces its total
//! length before its last segment.

use super::access::{check_access, lookup, Right};
use super::cq::{Expected, Queue};
use super::fabric::{with_ddp_header, Fabric, ModelError, Side};
use super::memory::HostMemory;
use super::qp::{Awaiting, Receiving};
use super::rnic::{sq_cqe, terminated_read_status, ErrorCause};
use super::wire::tagged_ulpdus;
use crate::atomic::OPERAND_LEN;
use crate::ddp::DdpHeader;
use crate::host::context::{stag_index, MrContext, QpState, TermInfo};
use crate::host::desc::{Cqe, CqeOpcode, CqeStatus};
use crate::rdmap::{parse_ulpdu, AtomicResponse, Opcode, RdmapHeader, Segment, QN_READ_ATOMIC_REQUEST};
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
        Fault { terminate: with_ddp_header(Terminate::new(code), ulpdu), claimed: CqeStatus::Flushed }
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
        let rts = self.rnic(side).qp(qpn).is_some_and(|qp| qp.ctx.state == QpState::Rts);
        if !rts {
            return Ok(());
        }
        let result = match parse_ulpdu(ulpdu) {
            Err(e) => Err(Fault::segment(e.term_code(), ulpdu)),
            Ok(seg) => match seg.opcode {
                Opcode::Send | Opcode::SendInvalidate | Opcode::SendSolicited | Opcode::SendSolicitedInvalidate => {
                    self.rx_send(side, qpn, &seg, ulpdu)?
                }
                Opcode::RdmaWrite => self.rx_write(side, qpn, &seg, ulpdu)?,
                Opcode::ReadRequest => self.rx_read_request(side, qpn, &seg, ulpdu)?,
                Opcode::ReadResponse => self.rx_read_response(side, qpn, &seg, ulpdu)?,
                Opcode::Terminate => {
                    self.rx_terminate(side, qpn, &seg);
                    Ok(())
                }
                Opcode::ImmediateData | Opcode::ImmediateDataSolicited => self.rx_immediate(side, qpn, &seg, ulpdu)?,
                Opcode::AtomicRequest => self.rx_atomic_request(side, qpn, &seg, ulpdu)?,
                Opcode::AtomicResponse => self.rx_atomic_response(side, qpn, &seg, ulpdu)?,
            },
        };
        if let Err(fault) = result {
            self.send_terminate(side, qpn, fault.terminate);
            let cause = ErrorCause { racy: true, read: None, receiving: fault.claimed };
            self.rnics[side.index()].enter_error(qpn, cause);
        }
        Ok(())
    }

    /// The MPA layer failed QP `qpn`'s stream (see [`Fabric::deliver_mpa_error`]).
    pub(crate) fn mpa_error(&mut self, side: Side, qpn: u32, code: TermCode) {
        let rts = self.rnic(side).qp(qpn).is_some_and(|qp| qp.ctx.state == QpState::Rts);
        if rts {
            self.send_terminate(side, qpn, Terminate::new(code));
            let cause = ErrorCause { racy: true, read: None, receiving: CqeStatus::Flushed };
            self.rnics[side.index()].enter_error(qpn, cause);
        }
    }

    /// A Send segment (QN 0). Checks, in order: MSN (`1/2/0x03`), a posted
    /// receive for a new message (`1/2/0x02`), MO (`1/2/0x04`), the
    /// Invalidate STag of every segment (RDMAP-12, SEC-06), length against the
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
                return Ok(Err(fault(TermCode::DDP_UNTAGGED_MSN_RANGE).claimed(CqeStatus::RemoteOperation)))
            }
            Some(r) if h.mo != r.placed => {
                return Ok(Err(fault(TermCode::DDP_UNTAGGED_INVALID_MO).claimed(CqeStatus::RemoteOperation)))
            }
            Some(r) => r,
            None => {
                if h.msn != qp.msn.recv {
                    return Ok(Err(fault(TermCode::DDP_UNTAGGED_MSN_RANGE)));
                }
                let Some(wqe) = qp.rq.pop_front() else {
                    return Ok(Err(fault(TermCode::DDP_UNTAGGED_NO_BUFFER)));
                };
                let r = Receiving { wqe, msn: h.msn, placed: 0 };
                qp.receiving = Some(r);
                if h.mo != 0 {
                    return Ok(Err(fault(TermCode::DDP_UNTAGGED_INVALID_MO).claimed(CqeStatus::RemoteOperation)));
                }
                r
            }
        };
        // Every segment's Invalidate STag, the first's and the later ones' alike: the last
        // one's is what the message invalidates, so none may name an MR unchecked.
        if let Some(stag) = inv_stag {
            if let Err(code) = check_invalidate(&rnic.mrs, qp.ctx.pd, stag) {
                return Ok(Err(fault(code).claimed(CqeStatus::RemoteAccess)));
            }
        }
        let len = seg.payload.len() as u64;
        if u64::from(h.mo) + len > u64::from(r.wqe.length) {
            return Ok(Err(fault(TermCode::DDP_UNTAGGED_TOO_LONG).claimed(CqeStatus::LocalLength)));
        }
        if len > 0 {
            let to = r.wqe.addr.checked_add(u64::from(h.mo));
            let iova =
                to.and_then(|to| check_access(&rnic.mrs, qp.ctx.pd, r.wqe.lkey, to, len, Right::LocalWrite).ok());
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
            match check_access(&rnic.mrs, pd, rr.src_stag, rr.src_to, rr.size.into(), Right::RemoteRead) {
                Err(e) => {
                    let mut f = Fault::segment(e.rdma_term_code(), ulpdu);
                    f.terminate = f.terminate.with_rdma(rr);
                    return Ok(Err(f));
                }
                Ok(iova) => rnic.mem.read(iova, rr.size as usize)?.to_vec(),
            }
        };
        for u in tagged_ulpdus(Opcode::ReadResponse, rr.sink_stag, rr.sink_to, &data, mulpdu) {
            self.transmit(side, qpn, u);
        }
        Ok(Ok(()))
    }

    /// A Read Response segment: it must continue the oldest outstanding
    /// Read (else `0/2/0x06`, also when the oldest ORD slot is an atomic)
    /// at its sink STag (`1/1/0x00`) and next TO within the size
    /// (`1/1/0x01`), and the sink MR must still allow the write; the last
    /// segment must end at the size (`0/2/0xFF`). The Read completes with
    /// the last segment.
    fn rx_read_response(&mut self, side: Side, qpn: u32, seg: &Segment, ulpdu: &[u8]) -> Rx {
        let DdpHeader::Tagged(h) = seg.ddp else {
            return Ok(Ok(()));
        };
        let fault = |code| Ok(Err(Fault::segment(code, ulpdu)));
        let rnic = &mut self.rnics[side.index()];
        let qp = &mut rnic.qps[qpn as usize];
        let Some(front) = qp.ord.front().copied() else {
            return fault(TermCode::RDMA_OP_UNEXPECTED_OPCODE);
        };
        let Awaiting::Read { request: rr, mut placed } = front.awaiting else {
            return fault(TermCode::RDMA_OP_UNEXPECTED_OPCODE);
        };
        // Every check comes before the segment is placed: a failing one places nothing.
        let len = seg.payload.len() as u64;
        let mut sink = None;
        if len > 0 {
            if h.stag != rr.sink_stag {
                return fault(TermCode::DDP_TAGGED_INVALID_STAG);
            }
            let next_to = rr.sink_to.wrapping_add(placed.into());
            if h.to != next_to || u64::from(placed) + len > u64::from(rr.size) {
                return fault(TermCode::DDP_TAGGED_BASE_BOUNDS);
            }
            match check_access(&rnic.mrs, qp.ctx.pd, h.stag, h.to, len, Right::LocalWrite) {
                Err(e) => return fault(e.ddp_term_code()),
                Ok(iova) => sink = Some(iova),
            }
        }
        let placed_after = placed + len as u32;
        if h.last && placed_after != rr.size {
            return fault(TermCode::RDMA_OP_UNSPECIFIED);
        }
        if let Some(iova) = sink {
            rnic.mem.write(iova, seg.payload)?;
        }
        placed = placed_after;
        if !h.last {
            if let Some(r) = qp.ord.front_mut() {
                r.awaiting = Awaiting::Read { request: rr, placed };
            }
            return Ok(Ok(()));
        }
        qp.ord.pop_front();
        if front.wqe.signaled {
            let cqe = sq_cqe(qpn, &front.wqe, CqeStatus::Success);
            rnic.complete(qpn, Queue::Send, Expected::Exact(cqe));
        }
        Ok(Ok(()))
    }

    /// Immediate Data (QN 0, RFC 7306 §6). Checks, in order: MSN
    /// (`1/2/0x03`; also when a Send is half received, whose receive it
    /// cannot continue), a posted receive (`1/2/0x02`), and exactly 8
    /// octets in one segment (`0/2/0xFF`: [`parse_ulpdu`] lets through the
    /// first pieces of a split message, which this RNIC refuses). The
    /// receive is consumed without being written or checked: the octets go
    /// into its CQE.
    fn rx_immediate(&mut self, side: Side, qpn: u32, seg: &Segment, ulpdu: &[u8]) -> Rx {
        let DdpHeader::Untagged(h) = seg.ddp else {
            return Ok(Ok(()));
        };
        let fault = |code| Fault::segment(code, ulpdu);
        let rnic = &mut self.rnics[side.index()];
        let qp = &mut rnic.qps[qpn as usize];
        if qp.receiving.is_some() {
            let f = fault(TermCode::DDP_UNTAGGED_MSN_RANGE).claimed(CqeStatus::RemoteOperation);
            return Ok(Err(f));
        }
        if h.msn != qp.msn.recv {
            return Ok(Err(fault(TermCode::DDP_UNTAGGED_MSN_RANGE)));
        }
        if qp.rq.is_empty() {
            return Ok(Err(fault(TermCode::DDP_UNTAGGED_NO_BUFFER)));
        }
        let RdmapHeader::ImmediateData(data) = seg.header else {
            return Ok(Err(fault(TermCode::RDMA_OP_UNSPECIFIED)));
        };
        let Some(wqe) = qp.rq.pop_front() else {
            return Ok(Ok(()));
        };
        qp.msn.recv = qp.msn.recv.wrapping_add(1);
        qp.status.rq_ci = qp.status.rq_ci.wrapping_add(1);
        let mut cqe = Cqe::new(wqe.wr_id, qpn as u16, CqeOpcode::RecvImm, CqeStatus::Success);
        cqe.byte_len = data.len() as u32;
        cqe.imm = u64::from_le_bytes(data);
        cqe.imm_valid = true;
        cqe.solicited = seg.opcode.is_solicited();
        rnic.complete(qpn, Queue::Recv, Expected::Exact(cqe));
        Ok(Ok(()))
    }

    /// An Atomic Request (QN 1, RFC 7306 §5.2.1). Every check comes before
    /// memory is touched, in order: MSN (`1/2/0x03`, shared with Read
    /// Requests), an IRD slot (`1/2/0x02`), a supported AOpCode
    /// (`0/2/0x06`), the target (valid, PD, REMOTE_ATOMIC, wrap, bounds:
    /// `0/1/0x00` / `0x03` / `0x02` / `0x04` / `0x01`) and the 8-alignment
    /// of its IOVA (`0/2/0x07`, RFC 7306 §8.2). The Terminates carry the
    /// DDP header only (§8.1 item 2). Then the word is read, updated and
    /// written back little-endian, and the original value goes back
    /// big-endian in an Atomic Response on QN 3.
    fn rx_atomic_request(&mut self, side: Side, qpn: u32, seg: &Segment, ulpdu: &[u8]) -> Rx {
        let (DdpHeader::Untagged(h), RdmapHeader::AtomicRequest(req)) = (seg.ddp, seg.header) else {
            return Ok(Ok(()));
        };
        let fault = |code| Ok(Err(Fault::segment(code, ulpdu)));
        let rnic = &mut self.rnics[side.index()];
        let qp = &mut rnic.qps[qpn as usize];
        if h.msn != qp.msn.read_request_recv {
            return fault(TermCode::DDP_UNTAGGED_MSN_RANGE);
        }
        if qp.ctx.ird == 0 {
            return fault(TermCode::DDP_UNTAGGED_NO_BUFFER);
        }
        qp.msn.read_request_recv = h.msn.wrapping_add(1);
        if req.op().is_err() {
            return fault(TermCode::RDMA_OP_UNEXPECTED_OPCODE);
        }
        let (len, right) = (OPERAND_LEN as u64, Right::RemoteAtomic);
        let iova = match check_access(&rnic.mrs, qp.ctx.pd, req.stag, req.to, len, right) {
            Err(e) => return fault(e.rdma_term_code()),
            Ok(iova) => iova,
        };
        if iova % len != 0 {
            return fault(TermCode::RDMA_OP_CATASTROPHIC_STREAM);
        }
        let original = read_word(&rnic.mem, iova)?;
        let Ok(updated) = req.apply(original) else {
            return fault(TermCode::RDMA_OP_UNEXPECTED_OPCODE);
        };
        rnic.mem.write(iova, &updated.to_le_bytes())?;
        let msn = qp.msn.atomic_response;
        qp.msn.atomic_response = msn.wrapping_add(1);
        let response = AtomicResponse { request_id: req.request_id, original };
        self.transmit(side, qpn, Segment::atomic_response(msn, response).to_vec());
        Ok(Ok(()))
    }

    /// An Atomic Response (QN 3) at the requester. Checks, in order: its
    /// MSN is the next one (`1/2/0x03`); the oldest ORD slot is an atomic
    /// with this Request Identifier (`0/2/0xFF`: an unsolicited or
    /// mismatched response, CHECKLIST ATOM-16); its local buffer still
    /// takes the write (the DDP codes of a Read Response sink). Then the
    /// original value is stored little-endian and the atomic completes.
    fn rx_atomic_response(&mut self, side: Side, qpn: u32, seg: &Segment, ulpdu: &[u8]) -> Rx {
        let (DdpHeader::Untagged(h), RdmapHeader::AtomicResponse(resp)) = (seg.ddp, seg.header) else {
            return Ok(Ok(()));
        };
        let fault = |code| Ok(Err(Fault::segment(code, ulpdu)));
        let rnic = &mut self.rnics[side.index()];
        let qp = &mut rnic.qps[qpn as usize];
        if h.msn != qp.msn.atomic_response_recv {
            return fault(TermCode::DDP_UNTAGGED_MSN_RANGE);
        }
        let Some(front) = qp.ord.front().copied() else {
            return fault(TermCode::RDMA_OP_UNSPECIFIED);
        };
        if front.awaiting != (Awaiting::Atomic { request_id: resp.request_id }) {
            return fault(TermCode::RDMA_OP_UNSPECIFIED);
        }
        let wqe = front.wqe;
        let len = OPERAND_LEN as u64;
        match check_access(&rnic.mrs, qp.ctx.pd, wqe.lkey, wqe.local_addr, len, Right::LocalWrite) {
            Err(e) => return fault(e.ddp_term_code()),
            Ok(iova) => rnic.mem.write(iova, &resp.original.to_le_bytes())?,
        }
        qp.msn.atomic_response_recv = h.msn.wrapping_add(1);
        qp.ord.pop_front();
        if wqe.signaled {
            let cqe = sq_cqe(qpn, &wqe, CqeStatus::Success);
            rnic.complete(qpn, Queue::Send, Expected::Exact(cqe));
        }
        Ok(Ok(()))
    }

    /// A Terminate from the peer: the QP enters ERROR. The outstanding Read
    /// or atomic its Terminated DDP Header names (QN 1, by MSN) completes
    /// with the status of [`terminated_read_status`]; the rest is flushed.
    fn rx_terminate(&mut self, side: Side, qpn: u32, seg: &Segment) {
        let RdmapHeader::Terminate(t) = seg.header else {
            return;
        };
        let named_read = t.ddp_header.and_then(|h| h.parse().ok()).and_then(|h| match h {
            DdpHeader::Untagged(u) if u.qn == QN_READ_ATOMIC_REQUEST => Some(u.msn),
            _ => None,
        });
        let rnic = &mut self.rnics[side.index()];
        rnic.qps[qpn as usize].status.terminate.get_or_insert(TermInfo { code: t.code, received: true });
        let cause = ErrorCause {
            racy: true,
            read: named_read.map(|msn| (msn, terminated_read_status(t.code))),
            receiving: CqeStatus::Flushed,
        };
        rnic.enter_error(qpn, cause);
    }
}

/// The 8-octet word at `iova`, little-endian as the host keeps it (CHECKLIST
/// ATOM-11).
fn read_word(mem: &HostMemory, iova: u64) -> Result<u64, ModelError> {
    let mut word = [0u8; OPERAND_LEN];
    word.copy_from_slice(mem.read(iova, OPERAND_LEN)?);
    Ok(u64::from_le_bytes(word))
}
