//! The RNIC top (`rnic_top`): BAR0 and the command unit, the DMA master with its
//! arbiters, the CQ writer, the transmit requester (SQ fetch → WQE checks → DDP
//! segmentation, its payload through a buffer that keeps the DMA read stream moving → MPA
//! framer → TX stream) and the receive side (RX stream → MPA deframer
//! → store-and-forward buffer → RDMAP receive engine: placement, receives claimed through
//! RQ fetch, the Read responder and Terminates, whose messages join the segmenter's).
//!
//! Streams: one AXI-Stream packet per FPDU. `m_axis_tx_tuser` is the QP's CONN_ID on
//! every beat; `s_axis_rx_tuser` is the number of the QP an FPDU is for, constant over
//! the packet, and the stream may change QP only between packets. A received packet that
//! is not exactly one FPDU, or a bad FPDU, fails its own QP (Terminate, ERROR) and no
//! other: the next packet is read as the FPDU it is, whatever QP it is for. Each QP's CRC_ENABLE
//! decides whether its FPDUs carry a CRC (else the field is zero) and whether received ones
//! are checked, and its MARKERS_TX / MARKERS_RX whether the FPDUs it sends / receives have
//! markers; each QP's stream keeps its own marker position in each direction (from 0 when
//! the QP is written in RESET), so connections with different options share the streams.
//!
//! Stream rings (BAR0 0x3000, off after reset): for a card without a TCP engine, the TX
//! stream can go to a ring in host memory instead of `m_axis_tx_*`, and the RX stream come
//! from one instead of `s_axis_rx_*`, so that the driver carries them over kernel sockets.
//!
//! Device memory (32 KiB of on-chip RAM) sits behind an IOVA window in front of the DMA
//! master's AXI port: MRs whose IOVAs lie there are served on chip, and BAR0 reaches the
//! same RAM from 0x8000 on.
//!
//! Sizes: 64 QPs, 64 CQs, 256 MRs ([`RnicTop64`], `rnic_top`), or 16 QPs, 16 CQs, 64 MRs
//! for small FPGAs ([`RnicTop16`], `rnic_top_q16`: the per-QP and per-MR tables take a
//! third less logic and half the block RAMs); either way 8 octets per cycle, a 16 KiB
//! receive buffer (the largest ULPDU it takes), 32 KiB of device memory. The capability
//! registers report the sizes, and the driver takes them from there.
use rust_hdl::prelude::*;

use rnic_proto::model::RnicConfig;

use crate::atomic::AtomicUnit;
use crate::common::{SkidBuffer, SmallFifo};
use crate::ddp::rx_buffer::DESC_BITS;
use crate::ddp::{RxBuffer, TxPayload, TxSegment};
use crate::host::{
    AxiWindow, CqWriter, DevMem, Dma, DmaFence, DmaReadArb, DmaWriteArb, HostCtrl, RqFetch, SqFetch, StreamRxRing,
    StreamTxRing,
};
use crate::mpa::{MpaRx, MpaTx, Positions};
use crate::rdmap::{RdmapRx, TxRequest, SLOT_BITS};

/// Segmenter job tags: CONN_ID in bits 0..15, then these flags.
/// The job is the receive engine's (a Read Response or a Terminate).
const TAG_RX_JOB: u64 = 1 << 16;
/// The job's QP runs with MPA CRCs.
const TAG_CRC: u64 = 1 << 17;
/// `ulpdu_slice` holds a beat's data, last flag and descriptor.
const _: () = assert!(64 + 1 + DESC_BITS == 105);
// The job's QP number sits in bits 23:18.

/// Sizes: `QB`/`CB`/`MB` = QP/CQ/MR index bits, `Q`/`C`/`M` = their counts; the receive
/// engine's `RB` = `QB + SLOT_BITS`, `RB1` = `RB + 1`, `RB2` = `RB + 2`, `QL` = `16 Q`
/// ([`RnicTop64`] is the default build).
#[derive(LogicBlock)]
pub struct RnicTop<
    const QB: usize,
    const Q: usize,
    const CB: usize,
    const C: usize,
    const MB: usize,
    const M: usize,
    const RB: usize,
    const RB1: usize,
    const RB2: usize,
    const QL: usize,
> {
    pub clock: Signal<In, Clock>,
    pub reset: Signal<In, Bit>,
    pub s_axil_awaddr: Signal<In, Bits<16>>,
    pub s_axil_awvalid: Signal<In, Bit>,
    pub s_axil_awready: Signal<Out, Bit>,
    pub s_axil_wdata: Signal<In, Bits<32>>,
    pub s_axil_wstrb: Signal<In, Bits<4>>,
    pub s_axil_wvalid: Signal<In, Bit>,
    pub s_axil_wready: Signal<Out, Bit>,
    pub s_axil_bresp: Signal<Out, Bits<2>>,
    pub s_axil_bvalid: Signal<Out, Bit>,
    pub s_axil_bready: Signal<In, Bit>,
    pub s_axil_araddr: Signal<In, Bits<16>>,
    pub s_axil_arvalid: Signal<In, Bit>,
    pub s_axil_arready: Signal<Out, Bit>,
    pub s_axil_rdata: Signal<Out, Bits<32>>,
    pub s_axil_rresp: Signal<Out, Bits<2>>,
    pub s_axil_rvalid: Signal<Out, Bit>,
    pub s_axil_rready: Signal<In, Bit>,
    pub m_axi_awaddr: Signal<Out, Bits<64>>,
    pub m_axi_awlen: Signal<Out, Bits<8>>,
    pub m_axi_awsize: Signal<Out, Bits<3>>,
    pub m_axi_awburst: Signal<Out, Bits<2>>,
    pub m_axi_awvalid: Signal<Out, Bit>,
    pub m_axi_awready: Signal<In, Bit>,
    pub m_axi_wdata: Signal<Out, Bits<64>>,
    pub m_axi_wstrb: Signal<Out, Bits<8>>,
    pub m_axi_wlast: Signal<Out, Bit>,
    pub m_axi_wvalid: Signal<Out, Bit>,
    pub m_axi_wready: Signal<In, Bit>,
    pub m_axi_bresp: Signal<In, Bits<2>>,
    pub m_axi_bvalid: Signal<In, Bit>,
    pub m_axi_bready: Signal<Out, Bit>,
    pub m_axi_araddr: Signal<Out, Bits<64>>,
    pub m_axi_arlen: Signal<Out, Bits<8>>,
    pub m_axi_arsize: Signal<Out, Bits<3>>,
    pub m_axi_arburst: Signal<Out, Bits<2>>,
    pub m_axi_arvalid: Signal<Out, Bit>,
    pub m_axi_arready: Signal<In, Bit>,
    pub m_axi_rdata: Signal<In, Bits<64>>,
    pub m_axi_rresp: Signal<In, Bits<2>>,
    pub m_axi_rlast: Signal<In, Bit>,
    pub m_axi_rvalid: Signal<In, Bit>,
    pub m_axi_rready: Signal<Out, Bit>,
    pub irq_valid: Signal<Out, Bit>,
    pub irq_ready: Signal<In, Bit>,
    pub irq_vector: Signal<Out, Bits<16>>,
    pub m_axis_tx_tdata: Signal<Out, Bits<64>>,
    pub m_axis_tx_tkeep: Signal<Out, Bits<8>>,
    pub m_axis_tx_tlast: Signal<Out, Bit>,
    pub m_axis_tx_tvalid: Signal<Out, Bit>,
    pub m_axis_tx_tready: Signal<In, Bit>,
    pub m_axis_tx_tuser: Signal<Out, Bits<16>>,
    pub s_axis_rx_tdata: Signal<In, Bits<64>>,
    pub s_axis_rx_tkeep: Signal<In, Bits<8>>,
    pub s_axis_rx_tlast: Signal<In, Bit>,
    pub s_axis_rx_tvalid: Signal<In, Bit>,
    pub s_axis_rx_tready: Signal<Out, Bit>,
    pub s_axis_rx_tuser: Signal<In, Bits<16>>,
    ctrl: HostCtrl<QB, Q, CB, MB, M>,
    dma: Dma,
    /// The command unit's DMA fence over the two arbiters below.
    fence: DmaFence<5, 4>,
    /// The DMA master's accesses to device memory IOVAs go to `dev_mem`.
    window: AxiWindow<15>,
    /// Device memory: 32 KiB of on-chip RAM, MRs like host memory, BAR0 from 0x8000 on.
    dev_mem: DevMem<12>,
    /// Clients: 0 SQ WQEs, 1 transmit payload, 2 RQ WQEs, 3 atomic targets, 4 the RX
    /// stream ring.
    reads: DmaReadArb<5, 320, 160>,
    /// Clients: 0 CQEs, 1 placement, 2 atomic write-backs, 3 the TX stream ring.
    writes: DmaWriteArb<4, 256, 128, 256, 32>,
    /// The streams through host memory, when the driver turns them on.
    tx_ring: StreamTxRing,
    rx_ring: StreamRxRing,
    /// The receive stream from the RX stream ring (or the port) to the deframer, through a
    /// register slice: the ring's queue RAM reaches the deframer from a register.
    /// TDATA (0..64), TKEEP (64..72), TLAST (72), TUSER (73..89: the QP number).
    rx_slice: SkidBuffer<89>,
    /// The rings' register pages (BAR0 offset bits 15..5).
    tx_ring_page: Constant<Bits<11>>,
    rx_ring_page: Constant<Bits<11>>,
    /// The responder's one atomic unit: every QP's atomics in arrival order (RFC 7306 §5.3).
    atomics: AtomicUnit,
    cqs: CqWriter<CB, C>,
    /// The engines' completions on their way to the CQ writer, through a register slice:
    /// the writer's ready reaches the engines from a register, their CQEs reach it from
    /// one. CQE (0..256), CQ number (256..272).
    cqe_slice: SkidBuffer<272>,
    sq: SqFetch<QB, Q>,
    requester: TxRequest<QB, Q, CB, MB, M>,
    segmenter: TxSegment,
    /// Payload on its way to the segmenter (16 KiB), requested only when it fits.
    payload: TxPayload<11, 12>,
    /// The segmenter's stream to the framer, through a register slice: the framer's
    /// ready (and the FPDU queues' room) reaches the segmenter a cycle later, from a
    /// register. TDATA (0..64), TKEEP (64..72), TLAST (72), TUSER (73..89), TID (89..121).
    tx_slice: SkidBuffer<121>,
    /// The read arbiter's requests to the DMA engine, through a register slice: the
    /// engine's ready reaches the arbiter (and its clients) from a register, and the
    /// clients' requests reach the engine from one. Address (0..64), length (64..96),
    /// tag (96..104).
    rd_slice: SkidBuffer<104>,
    /// The payload buffer's octets to the segmenter, through a register slice: the
    /// segmenter's packing decision reaches the buffer's read logic from a register, and
    /// the buffer's data reaches the packer from one. TDATA (0..64), TKEEP (64..72),
    /// TLAST (72).
    payload_slice: SkidBuffer<73>,
    /// The segmenter's jobs (the receive engine's or the requester's, picked in front of
    /// it) through a register slice: the segmenter's ready reaches both engines from a
    /// register, and the picked job reaches the segmenter from one. tagged (0), opcode
    /// (1..5), stag (5..37), to (37..101), qn (101..133), msn (133..165), addr (165..229),
    /// len (229..261), inline (261..677), inline_len (677..683), mulpdu (683..699), tag
    /// (699..731).
    job_slice: SkidBuffer<731>,
    /// The picked job, into `job_slice`.
    job_tagged: Signal<Local, Bit>,
    job_opcode: Signal<Local, Bits<4>>,
    job_stag: Signal<Local, Bits<32>>,
    job_to: Signal<Local, Bits<64>>,
    job_qn: Signal<Local, Bits<32>>,
    job_msn: Signal<Local, Bits<32>>,
    job_addr: Signal<Local, Bits<64>>,
    job_len: Signal<Local, Bits<32>>,
    job_inline: Signal<Local, Bits<416>>,
    job_inline_len: Signal<Local, Bits<6>>,
    job_mulpdu: Signal<Local, Bits<16>>,
    job_tag: Signal<Local, Bits<32>>,
    framer: MpaTx<64, 8, 192>,
    /// The framer's FPDUs to the TX stream ring (and the port), through a register slice:
    /// the ring's and the port's ready reach the framer (and its marker positions) from a
    /// register. TDATA (0..64), TKEEP (64..72), TLAST (72), TUSER (73..89: the CONN_ID).
    framed_slice: SkidBuffer<89>,
    /// The CONN_ID (low 16 bits) and CRC setting (bit 16) of each FPDU between segmenter
    /// and framer output.
    tx_conns: SmallFifo<17>,
    /// The QP of each FPDU between segmenter and the framer's marker stage, and per QP
    /// the stream position (mod 512) where its next FPDU starts: connections have their
    /// own marker positions.
    tx_fpdus: SmallFifo<QB>,
    tx_positions: Positions<QB, Q>,
    tx_qp: DFF<Bits<QB>>,
    tx_ending: Signal<Local, Bits<QB>>,
    /// The positions' write (an FPDU's end) and clear (a QP reset) reach `tx_positions` a
    /// cycle late, from registers, in the order they happened: the framer's plan never
    /// reaches the positions' RAM and forwarding. An FPDU that does not chain waits while
    /// either is being written, so `held` has it in when the FPDU starts.
    tx_end_write: DFF<Bit>,
    tx_end_qp: DFF<Bits<QB>>,
    tx_end_value: DFF<Bits<9>>,
    tx_clear: DFF<Bit>,
    tx_clear_qp: DFF<Bits<QB>>,
    /// The next FPDU's settings from registers, as on the receive side: `tx_head_seen` a
    /// cycle after the QP queue's head changed, `tx_next_held` a cycle later, when
    /// `tx_next_markers` and `Positions`' `held` are the head's.
    tx_head_seen: DFF<Bit>,
    tx_next_held: DFF<Bit>,
    tx_next_markers: DFF<Bit>,
    /// The head FPDU is its QP's next after the FPDU the framer started last, and that QP
    /// was not written since (`tx_qp_touched`, set from reset until an FPDU starts): it
    /// goes on from the framer's own end position and marker setting, without waiting for
    /// `held`.
    tx_chain: DFF<Bit>,
    tx_qp_touched: DFF<Bit>,
    tx_qp_written: Signal<Local, Bit>,
    tx_first: DFF<Bit>,
    tx_tdata: Signal<Local, Bits<64>>,
    tx_tkeep: Signal<Local, Bits<8>>,
    tx_tlast: Signal<Local, Bit>,
    tx_tuser: Signal<Local, Bits<16>>,
    tx_tid: Signal<Local, Bits<32>>,
    reset_q: DFF<Bit>,
    deframer: MpaRx<64, 8, 256, 96, 12>,
    /// The deframer's FPDU content to the RX buffer, through a register slice: the
    /// buffer's ready (its descriptor and length checks) reaches the deframer's pipe from a
    /// register. TDATA (0..64), TKEEP (64..72), TLAST (72), TUSER (73..81: the verdict).
    fpdu_slice: SkidBuffer<81>,
    /// The QP of each FPDU between RX stream and deframer output.
    rx_qps: SmallFifo<16>,
    /// The QP of each FPDU from its first beat until the deframer parses it (its CRC and
    /// marker settings apply then), and per QP the octets from where its next FPDU starts
    /// to its next marker.
    rx_fpdus: SmallFifo<QB>,
    /// The next FPDU's QP, out of `rx_fpdus` into a register. Its settings and marker
    /// distance are selected from it into registers of their own (the distance read from
    /// block RAM, then registered with the writes since), so the deframer's parse starts
    /// from registers: `rx_next_ready` once the RAM has been read at the QP for a cycle,
    /// `rx_next_held` a cycle later, when the registers hold its settings. The RAM and the
    /// marker setting are read at `rx_next_read`: the queue's head as it comes out into an
    /// empty `rx_next_qp` (the usual case for short FPDUs, whose packets follow each other
    /// closely), so that its settings are ready a cycle sooner; else `rx_next_qp`.
    rx_next_qp: DFF<Bits<QB>>,
    rx_next_read: Signal<Local, Bits<QB>>,
    rx_next_early: Signal<Local, Bit>,
    rx_next_valid: DFF<Bit>,
    rx_next_ready: DFF<Bit>,
    rx_next_held: DFF<Bit>,
    rx_next_markers: DFF<Bit>,
    /// `rx_next_markers` a cycle later, beside the deframer, whose parse reads it (it is
    /// ready with `rx_next_held`).
    rx_held_markers: DFF<Bit>,
    rx_next_crc: DFF<Bit>,
    rx_positions: Positions<QB, Q>,
    rx_qp: DFF<Bits<QB>>,
    /// The segmenter's drop order for the message it walks (its QP reset), a register.
    seg_drop: DFF<Bit>,
    rx_first: DFF<Bit>,
    rx_open: Signal<Local, Bit>,
    rx_buffer: RxBuffer<11, 12>,
    /// The buffered ULPDUs to the RDMAP receiver, through a register slice: the
    /// receiver's ready (its placement writes' ready among them) reaches the buffer's read
    /// pointer from a register. TDATA (0..64), TLAST (64), TUSER (65..105: the descriptor).
    ulpdu_slice: SkidBuffer<105>,
    receiver: RdmapRx<QB, Q, CB, MB, M, RB, RB1, RB2, QL>,
    rq: RqFetch<QB, Q>,
    rx_job: Signal<Local, Bit>,
    rx_cqe: Signal<Local, Bit>,
    /// CQEs handed to the CQ writer (into its register slice, which keeps their order), and
    /// the count once the receive engine's latest was handed over: when `cqs.settled`
    /// reaches that, every receive completion is in memory.
    cqes_taken: DFF<Bits<32>>,
    rx_cqes_due: DFF<Bits<32>>,
    rx_cqes_behind: Signal<Local, Bits<32>>,
    tag_rx_job: Constant<Bits<32>>,
    tag_crc: Constant<Bits<32>>,
    one_q: Constant<Bits<Q>>,
}

/// The default build: 64 QPs, 64 CQs, 256 MRs (`rnic_top`).
pub type RnicTop64 = RnicTop<6, 64, 6, 64, 8, 256, { 6 + SLOT_BITS }, { 7 + SLOT_BITS }, { 8 + SLOT_BITS }, 1024>;

/// The small-FPGA build: 16 QPs, 16 CQs, 64 MRs (`rnic_top_q16`).
pub type RnicTop16 = RnicTop<4, 16, 4, 16, 6, 64, { 4 + SLOT_BITS }, { 5 + SLOT_BITS }, { 6 + SLOT_BITS }, 256>;

impl<
        const QB: usize,
        const Q: usize,
        const CB: usize,
        const C: usize,
        const MB: usize,
        const M: usize,
        const RB: usize,
        const RB1: usize,
        const RB2: usize,
        const QL: usize,
    > Default for RnicTop<QB, Q, CB, C, MB, M, RB, RB1, RB2, QL>
{
    fn default() -> Self {
        const {
            assert!(
                Q <= 1 << QB
                    && C <= 1 << CB
                    && M <= 1 << MB
                    && RB == QB + SLOT_BITS
                    && RB1 == RB + 1
                    && RB2 == RB + 2
                    && QL == 16 * Q
            )
        };
        let config = RnicConfig { num_qps: Q as u32, num_cqs: C as u32, num_mrs: M as u32, ..RnicConfig::default() };
        assert_eq!(config.dm_size, 8 << 12, "DevMem<12> holds DM_SIZE octets");
        assert!(config.dm_size <= 1 << 15, "the window AxiWindow<15> covers the device memory");
        RnicTop {
            clock: Default::default(),
            reset: Default::default(),
            s_axil_awaddr: Default::default(),
            s_axil_awvalid: Default::default(),
            s_axil_awready: Default::default(),
            s_axil_wdata: Default::default(),
            s_axil_wstrb: Default::default(),
            s_axil_wvalid: Default::default(),
            s_axil_wready: Default::default(),
            s_axil_bresp: Default::default(),
            s_axil_bvalid: Default::default(),
            s_axil_bready: Default::default(),
            s_axil_araddr: Default::default(),
            s_axil_arvalid: Default::default(),
            s_axil_arready: Default::default(),
            s_axil_rdata: Default::default(),
            s_axil_rresp: Default::default(),
            s_axil_rvalid: Default::default(),
            s_axil_rready: Default::default(),
            m_axi_awaddr: Default::default(),
            m_axi_awlen: Default::default(),
            m_axi_awsize: Default::default(),
            m_axi_awburst: Default::default(),
            m_axi_awvalid: Default::default(),
            m_axi_awready: Default::default(),
            m_axi_wdata: Default::default(),
            m_axi_wstrb: Default::default(),
            m_axi_wlast: Default::default(),
            m_axi_wvalid: Default::default(),
            m_axi_wready: Default::default(),
            m_axi_bresp: Default::default(),
            m_axi_bvalid: Default::default(),
            m_axi_bready: Default::default(),
            m_axi_araddr: Default::default(),
            m_axi_arlen: Default::default(),
            m_axi_arsize: Default::default(),
            m_axi_arburst: Default::default(),
            m_axi_arvalid: Default::default(),
            m_axi_arready: Default::default(),
            m_axi_rdata: Default::default(),
            m_axi_rresp: Default::default(),
            m_axi_rlast: Default::default(),
            m_axi_rvalid: Default::default(),
            m_axi_rready: Default::default(),
            irq_valid: Default::default(),
            irq_ready: Default::default(),
            irq_vector: Default::default(),
            m_axis_tx_tdata: Default::default(),
            m_axis_tx_tkeep: Default::default(),
            m_axis_tx_tlast: Default::default(),
            m_axis_tx_tvalid: Default::default(),
            m_axis_tx_tready: Default::default(),
            m_axis_tx_tuser: Default::default(),
            s_axis_rx_tdata: Default::default(),
            s_axis_rx_tkeep: Default::default(),
            s_axis_rx_tlast: Default::default(),
            s_axis_rx_tvalid: Default::default(),
            s_axis_rx_tready: Default::default(),
            s_axis_rx_tuser: Default::default(),
            ctrl: HostCtrl::new(&config),
            dma: Default::default(),
            fence: Default::default(),
            window: AxiWindow::new(config.dm_base),
            dev_mem: Default::default(),
            reads: Default::default(),
            writes: Default::default(),
            tx_ring: Default::default(),
            rx_ring: Default::default(),
            rx_slice: Default::default(),
            tx_ring_page: crate::common::constant((rnic_proto::host::regs::TX_RING >> 5) as u64),
            rx_ring_page: crate::common::constant((rnic_proto::host::regs::RX_RING >> 5) as u64),
            atomics: Default::default(),
            cqs: Default::default(),
            cqe_slice: Default::default(),
            sq: Default::default(),
            requester: Default::default(),
            segmenter: Default::default(),
            payload: Default::default(),
            tx_slice: Default::default(),
            rd_slice: Default::default(),
            payload_slice: Default::default(),
            job_slice: Default::default(),
            job_tagged: Default::default(),
            job_opcode: Default::default(),
            job_stag: Default::default(),
            job_to: Default::default(),
            job_qn: Default::default(),
            job_msn: Default::default(),
            job_addr: Default::default(),
            job_len: Default::default(),
            job_inline: Default::default(),
            job_inline_len: Default::default(),
            job_mulpdu: Default::default(),
            job_tag: Default::default(),
            framer: Default::default(),
            framed_slice: Default::default(),
            tx_conns: Default::default(),
            tx_fpdus: Default::default(),
            tx_positions: Default::default(),
            tx_qp: Default::default(),
            tx_ending: Default::default(),
            tx_end_write: Default::default(),
            tx_end_qp: Default::default(),
            tx_end_value: Default::default(),
            tx_clear: Default::default(),
            tx_clear_qp: Default::default(),
            tx_head_seen: Default::default(),
            tx_next_held: Default::default(),
            tx_next_markers: Default::default(),
            tx_first: Default::default(),
            tx_chain: Default::default(),
            tx_qp_touched: Default::default(),
            tx_qp_written: Default::default(),
            tx_tdata: Default::default(),
            tx_tkeep: Default::default(),
            tx_tlast: Default::default(),
            tx_tuser: Default::default(),
            tx_tid: Default::default(),
            reset_q: Default::default(),
            deframer: Default::default(),
            fpdu_slice: Default::default(),
            rx_qps: Default::default(),
            rx_buffer: Default::default(),
            ulpdu_slice: Default::default(),
            receiver: Default::default(),
            rq: Default::default(),
            rx_job: Default::default(),
            rx_cqe: Default::default(),
            cqes_taken: Default::default(),
            rx_cqes_due: Default::default(),
            rx_cqes_behind: Default::default(),
            tag_rx_job: crate::common::constant(TAG_RX_JOB),
            tag_crc: crate::common::constant(TAG_CRC),
            one_q: crate::common::constant(1),
            rx_fpdus: Default::default(),
            rx_next_qp: Default::default(),
            rx_next_valid: Default::default(),
            rx_next_read: Default::default(),
            rx_next_early: Default::default(),
            rx_next_ready: Default::default(),
            rx_next_held: Default::default(),
            rx_next_markers: Default::default(),
            rx_held_markers: Default::default(),
            rx_next_crc: Default::default(),
            rx_positions: Default::default(),
            rx_qp: Default::default(),
            seg_drop: Default::default(),
            rx_first: Default::default(),
            rx_open: Default::default(),
        }
    }
}

impl<
        const QB: usize,
        const Q: usize,
        const CB: usize,
        const C: usize,
        const MB: usize,
        const M: usize,
        const RB: usize,
        const RB1: usize,
        const RB2: usize,
        const QL: usize,
    > Logic for RnicTop<QB, Q, CB, C, MB, M, RB, RB1, RB2, QL>
{
    #[hdl_gen]
    fn update(&mut self) {
        clock!(
            self,
            clock,
            ctrl,
            dma,
            fence,
            window,
            dev_mem,
            reads,
            writes,
            tx_ring,
            rx_ring,
            rx_slice,
            atomics,
            cqs,
            cqe_slice,
            sq,
            requester,
            segmenter,
            payload,
            tx_slice,
            rd_slice,
            payload_slice,
            job_slice,
            framer,
            framed_slice,
            tx_conns,
            deframer,
            fpdu_slice,
            rx_qps,
            rx_buffer,
            ulpdu_slice,
            receiver,
            rq
        );
        dff_setup!(
            self,
            clock,
            tx_first,
            rx_first,
            reset_q,
            tx_qp,
            tx_end_write,
            tx_end_qp,
            tx_end_value,
            tx_clear,
            tx_clear_qp,
            tx_head_seen,
            tx_next_held,
            tx_next_markers,
            tx_chain,
            tx_qp_touched,
            rx_qp,
            seg_drop,
            rx_next_qp,
            rx_next_valid,
            rx_next_ready,
            rx_next_held,
            rx_next_markers,
            rx_held_markers,
            rx_next_crc,
            cqes_taken,
            rx_cqes_due
        );
        // The reset input is registered once and fans out from the register: no block's
        // logic depends on an input pin directly (which also spares a simulator from
        // re-evaluating all of it on every input change).
        self.reset_q.d.next = self.reset.val();
        self.tx_conns.reset.next = self.reset_q.q.val();
        self.tx_slice.reset.next = self.reset_q.q.val();
        self.rd_slice.reset.next = self.reset_q.q.val();
        self.payload_slice.reset.next = self.reset_q.q.val();
        self.job_slice.reset.next = self.reset_q.q.val();
        self.framed_slice.reset.next = self.reset_q.q.val();
        self.rx_slice.reset.next = self.reset_q.q.val();
        self.ulpdu_slice.reset.next = self.reset_q.q.val();
        self.cqe_slice.reset.next = self.reset_q.q.val();
        self.deframer.reset.next = self.reset_q.q.val();
        self.fpdu_slice.reset.next = self.reset_q.q.val();
        self.rx_qps.reset.next = self.reset_q.q.val();
        self.rx_fpdus.clock.next = self.clock.val();
        self.rx_fpdus.reset.next = self.reset_q.q.val();
        self.tx_fpdus.clock.next = self.clock.val();
        self.tx_fpdus.reset.next = self.reset_q.q.val();
        self.tx_positions.clock.next = self.clock.val();
        self.tx_positions.reset.next = self.reset_q.q.val();
        self.rx_positions.clock.next = self.clock.val();
        self.rx_positions.reset.next = self.reset_q.q.val();
        self.rx_buffer.reset.next = self.reset_q.q.val();
        self.receiver.reset.next = self.reset_q.q.val();
        self.rq.reset.next = self.reset_q.q.val();
        self.ctrl.reset.next = self.reset_q.q.val();
        self.dma.reset.next = self.reset_q.q.val();
        self.fence.reset.next = self.reset_q.q.val();
        self.window.reset.next = self.reset_q.q.val();
        self.dev_mem.reset.next = self.reset_q.q.val();
        self.reads.reset.next = self.reset_q.q.val();
        self.writes.reset.next = self.reset_q.q.val();
        self.tx_ring.reset.next = self.reset_q.q.val();
        self.rx_ring.reset.next = self.reset_q.q.val();
        self.atomics.reset.next = self.reset_q.q.val();
        self.cqs.reset.next = self.reset_q.q.val();
        self.sq.reset.next = self.reset_q.q.val();
        self.requester.reset.next = self.reset_q.q.val();
        self.segmenter.reset.next = self.reset_q.q.val();
        self.payload.reset.next = self.reset_q.q.val();
        self.framer.reset.next = self.reset_q.q.val();

        // BAR0.
        self.ctrl.s_axil_awaddr.next = self.s_axil_awaddr.val();
        self.ctrl.s_axil_awvalid.next = self.s_axil_awvalid.val();
        self.s_axil_awready.next = self.ctrl.s_axil_awready.val();
        self.ctrl.s_axil_wdata.next = self.s_axil_wdata.val();
        self.ctrl.s_axil_wstrb.next = self.s_axil_wstrb.val();
        self.ctrl.s_axil_wvalid.next = self.s_axil_wvalid.val();
        self.s_axil_wready.next = self.ctrl.s_axil_wready.val();
        self.s_axil_bresp.next = self.ctrl.s_axil_bresp.val();
        self.s_axil_bvalid.next = self.ctrl.s_axil_bvalid.val();
        self.ctrl.s_axil_bready.next = self.s_axil_bready.val();
        self.ctrl.s_axil_araddr.next = self.s_axil_araddr.val();
        self.ctrl.s_axil_arvalid.next = self.s_axil_arvalid.val();
        self.s_axil_arready.next = self.ctrl.s_axil_arready.val();
        self.s_axil_rdata.next = self.ctrl.s_axil_rdata.val();
        self.s_axil_rresp.next = self.ctrl.s_axil_rresp.val();
        self.s_axil_rvalid.next = self.ctrl.s_axil_rvalid.val();
        self.ctrl.s_axil_rready.next = self.s_axil_rready.val();
        // (STATUS.IDLE is not reported yet: it reads 0.)
        self.ctrl.idle.next = false;
        // A command that changed a context completes once the DMA asked for before it has.
        self.fence.start.next = self.ctrl.fence_start.val();
        self.ctrl.fence_done.next = self.fence.done.val();
        // The payload client holds a request from the moment the segmenter offers it, also
        // while it waits for room in TxPayload: its read may be of a QP being reset.
        self.fence.rd_pending.next =
            self.reads.s_req_valid.val() | (bit_cast::<5, 1>(self.segmenter.m_rd_req_valid.val().into()) << 1);
        self.fence.rd_taken.next = self.reads.s_req_valid.val() & self.reads.s_req_ready.val();
        self.fence.wr_pending.next = self.writes.s_req_valid.val();
        self.fence.wr_taken.next = self.writes.s_req_valid.val() & self.writes.s_req_ready.val();
        // (A read is issued once it is past the arbiter: the register slice keeps order.)
        self.fence.rd_issue.next = self.reads.m_req_valid.val() & self.rd_slice.s_ready.val();
        self.fence.rd_complete.next =
            self.dma.m_rd_axis_tvalid.val() & self.dma.m_rd_axis_tready.val() & self.dma.m_rd_axis_tlast.val();
        self.fence.wr_issue.next = self.writes.m_req_valid.val() & self.dma.s_wr_req_ready.val();
        self.fence.wr_complete.next = self.dma.m_wr_done_valid.val();
        // Failures: the requester's at once (0/0/0x00), the receive engine's when the
        // requester is quiet.
        self.ctrl.fail.next = self.requester.m_fail.val() | self.receiver.m_fail.val();
        self.ctrl.fail_qp.next = self.receiver.m_fail_qp.val();
        self.ctrl.fail_term.next = self.receiver.m_fail_term.val();
        self.ctrl.fail_received.next = self.receiver.m_fail_received.val();
        if self.requester.m_fail.val() {
            self.ctrl.fail_qp.next = self.requester.m_fail_qp.val();
            self.ctrl.fail_term.next = 0.into();
            self.ctrl.fail_received.next = false;
        }
        self.receiver.s_tx_fail.next = self.requester.m_fail.val();
        self.receiver.s_tx_fail_qp.next = self.requester.m_fail_qp.val();
        self.ctrl.invalidate.next = self.receiver.m_invalidate.val();
        self.ctrl.invalidate_mr.next = self.receiver.m_invalidate_mr.val();
        // Status for QUERY_QP / QUERY_CQ from the engines that own it.
        self.sq.status_qpn.next = self.ctrl.status_index.val().get_bits::<QB>(0);
        self.rq.status_qpn.next = self.ctrl.status_index.val().get_bits::<QB>(0);
        self.cqs.status_cqn.next = self.ctrl.status_index.val().get_bits::<CB>(0);
        self.ctrl.status_sq_ci.next = self.sq.status_ci.val();
        self.ctrl.status_rq_ci.next = self.rq.status_ci.val();
        self.ctrl.status_cq_pi.next = self.cqs.status_pi.val();
        self.ctrl.status_cq_overflow.next = self.cqs.status_overflow.val();

        // The AXI4 master, through the device memory window: what lies in it is served
        // on chip, everything else goes to the host.
        self.window.s_axi_awaddr.next = self.dma.m_axi_awaddr.val();
        self.window.s_axi_awlen.next = self.dma.m_axi_awlen.val();
        self.window.s_axi_awsize.next = self.dma.m_axi_awsize.val();
        self.window.s_axi_awburst.next = self.dma.m_axi_awburst.val();
        self.window.s_axi_awvalid.next = self.dma.m_axi_awvalid.val();
        self.dma.m_axi_awready.next = self.window.s_axi_awready.val();
        self.window.s_axi_wdata.next = self.dma.m_axi_wdata.val();
        self.window.s_axi_wstrb.next = self.dma.m_axi_wstrb.val();
        self.window.s_axi_wlast.next = self.dma.m_axi_wlast.val();
        self.window.s_axi_wvalid.next = self.dma.m_axi_wvalid.val();
        self.dma.m_axi_wready.next = self.window.s_axi_wready.val();
        self.dma.m_axi_bresp.next = self.window.s_axi_bresp.val();
        self.dma.m_axi_bvalid.next = self.window.s_axi_bvalid.val();
        self.window.s_axi_bready.next = self.dma.m_axi_bready.val();
        self.window.s_axi_araddr.next = self.dma.m_axi_araddr.val();
        self.window.s_axi_arlen.next = self.dma.m_axi_arlen.val();
        self.window.s_axi_arsize.next = self.dma.m_axi_arsize.val();
        self.window.s_axi_arburst.next = self.dma.m_axi_arburst.val();
        self.window.s_axi_arvalid.next = self.dma.m_axi_arvalid.val();
        self.dma.m_axi_arready.next = self.window.s_axi_arready.val();
        self.dma.m_axi_rdata.next = self.window.s_axi_rdata.val();
        self.dma.m_axi_rresp.next = self.window.s_axi_rresp.val();
        self.dma.m_axi_rlast.next = self.window.s_axi_rlast.val();
        self.dma.m_axi_rvalid.next = self.window.s_axi_rvalid.val();
        self.window.s_axi_rready.next = self.dma.m_axi_rready.val();
        self.m_axi_awaddr.next = self.window.m_axi_awaddr.val();
        self.m_axi_awlen.next = self.window.m_axi_awlen.val();
        self.m_axi_awsize.next = self.window.m_axi_awsize.val();
        self.m_axi_awburst.next = self.window.m_axi_awburst.val();
        self.m_axi_awvalid.next = self.window.m_axi_awvalid.val();
        self.window.m_axi_awready.next = self.m_axi_awready.val();
        self.m_axi_wdata.next = self.window.m_axi_wdata.val();
        self.m_axi_wstrb.next = self.window.m_axi_wstrb.val();
        self.m_axi_wlast.next = self.window.m_axi_wlast.val();
        self.m_axi_wvalid.next = self.window.m_axi_wvalid.val();
        self.window.m_axi_wready.next = self.m_axi_wready.val();
        self.window.m_axi_bresp.next = self.m_axi_bresp.val();
        self.window.m_axi_bvalid.next = self.m_axi_bvalid.val();
        self.m_axi_bready.next = self.window.m_axi_bready.val();
        self.m_axi_araddr.next = self.window.m_axi_araddr.val();
        self.m_axi_arlen.next = self.window.m_axi_arlen.val();
        self.m_axi_arsize.next = self.window.m_axi_arsize.val();
        self.m_axi_arburst.next = self.window.m_axi_arburst.val();
        self.m_axi_arvalid.next = self.window.m_axi_arvalid.val();
        self.window.m_axi_arready.next = self.m_axi_arready.val();
        self.window.m_axi_rdata.next = self.m_axi_rdata.val();
        self.window.m_axi_rresp.next = self.m_axi_rresp.val();
        self.window.m_axi_rlast.next = self.m_axi_rlast.val();
        self.window.m_axi_rvalid.next = self.m_axi_rvalid.val();
        self.m_axi_rready.next = self.window.m_axi_rready.val();
        self.dev_mem.s_axi_awaddr.next = self.window.d_axi_awaddr.val();
        self.dev_mem.s_axi_awlen.next = self.window.d_axi_awlen.val();
        self.dev_mem.s_axi_awsize.next = self.window.d_axi_awsize.val();
        self.dev_mem.s_axi_awburst.next = self.window.d_axi_awburst.val();
        self.dev_mem.s_axi_awvalid.next = self.window.d_axi_awvalid.val();
        self.window.d_axi_awready.next = self.dev_mem.s_axi_awready.val();
        self.dev_mem.s_axi_wdata.next = self.window.d_axi_wdata.val();
        self.dev_mem.s_axi_wstrb.next = self.window.d_axi_wstrb.val();
        self.dev_mem.s_axi_wlast.next = self.window.d_axi_wlast.val();
        self.dev_mem.s_axi_wvalid.next = self.window.d_axi_wvalid.val();
        self.window.d_axi_wready.next = self.dev_mem.s_axi_wready.val();
        self.window.d_axi_bresp.next = self.dev_mem.s_axi_bresp.val();
        self.window.d_axi_bvalid.next = self.dev_mem.s_axi_bvalid.val();
        self.dev_mem.s_axi_bready.next = self.window.d_axi_bready.val();
        self.dev_mem.s_axi_araddr.next = self.window.d_axi_araddr.val();
        self.dev_mem.s_axi_arlen.next = self.window.d_axi_arlen.val();
        self.dev_mem.s_axi_arsize.next = self.window.d_axi_arsize.val();
        self.dev_mem.s_axi_arburst.next = self.window.d_axi_arburst.val();
        self.dev_mem.s_axi_arvalid.next = self.window.d_axi_arvalid.val();
        self.window.d_axi_arready.next = self.dev_mem.s_axi_arready.val();
        self.window.d_axi_rdata.next = self.dev_mem.s_axi_rdata.val();
        self.window.d_axi_rresp.next = self.dev_mem.s_axi_rresp.val();
        self.window.d_axi_rlast.next = self.dev_mem.s_axi_rlast.val();
        self.window.d_axi_rvalid.next = self.dev_mem.s_axi_rvalid.val();
        self.dev_mem.s_axi_rready.next = self.window.d_axi_rready.val();
        self.dev_mem.h_wr_en.next = self.ctrl.dm_wr_en.val();
        self.dev_mem.h_wr_addr.next = self.ctrl.dm_wr_addr.val();
        self.dev_mem.h_wr_data.next = self.ctrl.dm_wr_data.val();
        self.dev_mem.h_wr_strb.next = self.ctrl.dm_wr_strb.val();
        self.dev_mem.h_rd_en.next = self.ctrl.dm_rd_en.val();
        self.dev_mem.h_rd_addr.next = self.ctrl.dm_rd_addr.val();
        self.ctrl.dm_rd_data.next = self.dev_mem.h_rd_data.val();

        // DMA reads: client 0 fetches SQ WQEs, client 1 reads payload, client 2 RQ WQEs,
        // client 3 atomic targets, client 4 empties the RX stream ring.
        self.reads.s_req_valid.next = bit_cast::<5, 1>(self.sq.m_req_valid.val().into())
            | (bit_cast::<5, 1>(self.payload.m_req_valid.val().into()) << 1)
            | (bit_cast::<5, 1>(self.rq.m_req_valid.val().into()) << 2)
            | (bit_cast::<5, 1>(self.atomics.m_rd_req_valid.val().into()) << 3)
            | (bit_cast::<5, 1>(self.rx_ring.m_rd_req_valid.val().into()) << 4);
        self.reads.s_req_addr.next = bit_cast::<320, 64>(self.sq.m_req_addr.val())
            | (bit_cast::<320, 64>(self.payload.m_req_addr.val()) << 64)
            | (bit_cast::<320, 64>(self.rq.m_req_addr.val()) << 128)
            | (bit_cast::<320, 64>(self.atomics.m_rd_req_addr.val()) << 192)
            | (bit_cast::<320, 64>(self.rx_ring.m_rd_req_addr.val()) << 256);
        self.reads.s_req_len.next = bit_cast::<160, 32>(self.sq.m_req_len.val())
            | (bit_cast::<160, 32>(self.payload.m_req_len.val()) << 32)
            | (bit_cast::<160, 32>(self.rq.m_req_len.val()) << 64)
            | (bit_cast::<160, 32>(self.atomics.m_rd_req_len.val()) << 96)
            | (bit_cast::<160, 32>(self.rx_ring.m_rd_req_len.val()) << 128);
        self.rx_ring.m_rd_req_ready.next = self.reads.s_req_ready.val().get_bit(4);
        self.atomics.m_rd_req_ready.next = self.reads.s_req_ready.val().get_bit(3);
        self.sq.m_req_ready.next = self.reads.s_req_ready.val().get_bit(0);
        self.payload.m_req_ready.next = self.reads.s_req_ready.val().get_bit(1);
        self.payload.s_req_valid.next = self.segmenter.m_rd_req_valid.val();
        self.payload.s_req_addr.next = self.segmenter.m_rd_req_addr.val();
        self.payload.s_req_len.next = self.segmenter.m_rd_req_len.val();
        self.segmenter.m_rd_req_ready.next = self.payload.s_req_ready.val();
        self.rq.m_req_ready.next = self.reads.s_req_ready.val().get_bit(2);
        self.rd_slice.s_valid.next = self.reads.m_req_valid.val();
        self.reads.m_req_ready.next = self.rd_slice.s_ready.val();
        self.rd_slice.s_data.next = bit_cast::<104, 64>(self.reads.m_req_addr.val())
            | (bit_cast::<104, 32>(self.reads.m_req_len.val()) << 64)
            | (bit_cast::<104, 8>(self.reads.m_req_tag.val()) << 96);
        self.dma.s_rd_req_valid.next = self.rd_slice.m_valid.val();
        self.rd_slice.m_ready.next = self.dma.s_rd_req_ready.val();
        self.dma.s_rd_req_addr.next = self.rd_slice.m_data.val().get_bits::<64>(0);
        self.dma.s_rd_req_len.next = self.rd_slice.m_data.val().get_bits::<32>(64);
        self.dma.s_rd_req_tag.next = self.rd_slice.m_data.val().get_bits::<8>(96);
        self.reads.s_rd_tdata.next = self.dma.m_rd_axis_tdata.val();
        self.reads.s_rd_tkeep.next = self.dma.m_rd_axis_tkeep.val();
        self.reads.s_rd_tlast.next = self.dma.m_rd_axis_tlast.val();
        self.reads.s_rd_tuser.next = self.dma.m_rd_axis_tuser.val();
        self.reads.s_rd_tvalid.next = self.dma.m_rd_axis_tvalid.val();
        self.dma.m_rd_axis_tready.next = self.reads.s_rd_tready.val();
        self.sq.s_rd_tdata.next = self.reads.m_rd_tdata.val();
        self.sq.s_rd_tlast.next = self.reads.m_rd_tlast.val();
        self.sq.s_rd_tuser.next = bit_cast::<9, 1>(self.reads.m_rd_terror.val().into()) << 8;
        self.sq.s_rd_tvalid.next = self.reads.m_rd_tvalid.val().get_bit(0);
        self.payload.s_rd_tdata.next = self.reads.m_rd_tdata.val();
        self.payload.s_rd_tkeep.next = self.reads.m_rd_tkeep.val();
        self.payload.s_rd_tlast.next = self.reads.m_rd_tlast.val();
        self.payload.s_rd_tvalid.next = self.reads.m_rd_tvalid.val().get_bit(1);
        self.payload_slice.s_data.next = bit_cast::<73, 64>(self.payload.m_rd_tdata.val())
            | (bit_cast::<73, 8>(self.payload.m_rd_tkeep.val()) << 64_u64)
            | (bit_cast::<73, 1>(self.payload.m_rd_tlast.val().into()) << 72_u64);
        self.payload_slice.s_valid.next = self.payload.m_rd_tvalid.val();
        self.payload.m_rd_tready.next = self.payload_slice.s_ready.val();
        self.segmenter.s_rd_tdata.next = self.payload_slice.m_data.val().get_bits::<64>(0);
        self.segmenter.s_rd_tkeep.next = self.payload_slice.m_data.val().get_bits::<8>(64);
        self.segmenter.s_rd_tlast.next = self.payload_slice.m_data.val().get_bit(72);
        self.segmenter.s_rd_tvalid.next = self.payload_slice.m_valid.val();
        self.payload_slice.m_ready.next = self.segmenter.s_rd_tready.val();
        self.rq.s_rd_tdata.next = self.reads.m_rd_tdata.val();
        self.rq.s_rd_tlast.next = self.reads.m_rd_tlast.val();
        self.rq.s_rd_tuser.next = bit_cast::<9, 1>(self.reads.m_rd_terror.val().into()) << 8;
        self.rq.s_rd_tvalid.next = self.reads.m_rd_tvalid.val().get_bit(2);
        self.atomics.s_rd_tdata.next = self.reads.m_rd_tdata.val();
        self.atomics.s_rd_tkeep.next = self.reads.m_rd_tkeep.val();
        self.atomics.s_rd_tlast.next = self.reads.m_rd_tlast.val();
        self.atomics.s_rd_tvalid.next = self.reads.m_rd_tvalid.val().get_bit(3);
        self.rx_ring.s_rd_tdata.next = self.reads.m_rd_tdata.val();
        self.rx_ring.s_rd_terror.next = self.reads.m_rd_terror.val();
        self.rx_ring.s_rd_tvalid.next = self.reads.m_rd_tvalid.val().get_bit(4);
        self.reads.m_rd_tready.next = bit_cast::<5, 1>(self.sq.s_rd_tready.val().into())
            | (bit_cast::<5, 1>(self.payload.s_rd_tready.val().into()) << 1)
            | (bit_cast::<5, 1>(self.rq.s_rd_tready.val().into()) << 2)
            | (bit_cast::<5, 1>(self.atomics.s_rd_tready.val().into()) << 3)
            | (bit_cast::<5, 1>(self.rx_ring.s_rd_tready.val().into()) << 4);

        // DMA writes: client 0 writes CQEs, client 1 places received payload, client 2
        // writes atomic results back, client 3 fills the TX stream ring.
        self.writes.s_req_valid.next = bit_cast::<4, 1>(self.cqs.m_req_valid.val().into())
            | (bit_cast::<4, 1>(self.receiver.m_wr_req_valid.val().into()) << 1)
            | (bit_cast::<4, 1>(self.atomics.m_wr_req_valid.val().into()) << 2)
            | (bit_cast::<4, 1>(self.tx_ring.m_wr_req_valid.val().into()) << 3);
        self.writes.s_req_addr.next = bit_cast::<256, 64>(self.cqs.m_req_addr.val())
            | (bit_cast::<256, 64>(self.receiver.m_wr_req_addr.val()) << 64)
            | (bit_cast::<256, 64>(self.atomics.m_wr_req_addr.val()) << 128)
            | (bit_cast::<256, 64>(self.tx_ring.m_wr_req_addr.val()) << 192);
        self.writes.s_req_len.next = bit_cast::<128, 32>(self.cqs.m_req_len.val())
            | (bit_cast::<128, 32>(self.receiver.m_wr_req_len.val()) << 32)
            | (bit_cast::<128, 32>(self.atomics.m_wr_req_len.val()) << 64)
            | (bit_cast::<128, 32>(self.tx_ring.m_wr_req_len.val()) << 96);
        self.cqs.m_req_ready.next = self.writes.s_req_ready.val().get_bit(0);
        self.receiver.m_wr_req_ready.next = self.writes.s_req_ready.val().get_bit(1);
        self.atomics.m_wr_req_ready.next = self.writes.s_req_ready.val().get_bit(2);
        self.writes.s_wr_tdata.next = bit_cast::<256, 64>(self.cqs.m_axis_tdata.val())
            | (bit_cast::<256, 64>(self.receiver.m_wr_tdata.val()) << 64)
            | (bit_cast::<256, 64>(self.atomics.m_wr_tdata.val()) << 128)
            | (bit_cast::<256, 64>(self.tx_ring.m_wr_tdata.val()) << 192);
        self.writes.s_wr_tkeep.next = bit_cast::<32, 8>(self.cqs.m_axis_tkeep.val())
            | (bit_cast::<32, 8>(self.receiver.m_wr_tkeep.val()) << 8)
            | (bit_cast::<32, 8>(self.atomics.m_wr_tkeep.val()) << 16)
            | (bit_cast::<32, 8>(self.tx_ring.m_wr_tkeep.val()) << 24);
        self.writes.s_wr_tlast.next = bit_cast::<4, 1>(self.cqs.m_axis_tlast.val().into())
            | (bit_cast::<4, 1>(self.receiver.m_wr_tlast.val().into()) << 1)
            | (bit_cast::<4, 1>(self.atomics.m_wr_tlast.val().into()) << 2)
            | (bit_cast::<4, 1>(self.tx_ring.m_wr_tlast.val().into()) << 3);
        self.writes.s_wr_tvalid.next = bit_cast::<4, 1>(self.cqs.m_axis_tvalid.val().into())
            | (bit_cast::<4, 1>(self.receiver.m_wr_tvalid.val().into()) << 1)
            | (bit_cast::<4, 1>(self.atomics.m_wr_tvalid.val().into()) << 2)
            | (bit_cast::<4, 1>(self.tx_ring.m_wr_tvalid.val().into()) << 3);
        self.cqs.m_axis_tready.next = self.writes.s_wr_tready.val().get_bit(0);
        self.receiver.m_wr_tready.next = self.writes.s_wr_tready.val().get_bit(1);
        self.atomics.m_wr_tready.next = self.writes.s_wr_tready.val().get_bit(2);
        self.cqs.s_done_valid.next = self.writes.m_done_valid.val().get_bit(0);
        self.receiver.s_wr_done_valid.next = self.writes.m_done_valid.val().get_bit(1);
        self.atomics.s_wr_done_valid.next = self.writes.m_done_valid.val().get_bit(2);
        self.tx_ring.m_wr_req_ready.next = self.writes.s_req_ready.val().get_bit(3);
        self.tx_ring.m_wr_tready.next = self.writes.s_wr_tready.val().get_bit(3);
        self.tx_ring.s_wr_done_valid.next = self.writes.m_done_valid.val().get_bit(3);
        self.tx_ring.s_wr_done_error.next = self.writes.m_done_error.val();

        // Checked Atomic Requests to the atomic unit; its values back to the receive
        // engine's Atomic Response jobs.
        self.atomics.s_op_valid.next = self.receiver.m_atom_valid.val();
        self.receiver.m_atom_ready.next = self.atomics.s_op_ready.val();
        self.atomics.s_op_addr.next = self.receiver.m_atom_addr.val();
        self.atomics.s_op_aopcode.next = self.receiver.m_atom_aopcode.val();
        self.atomics.s_op_data.next = self.receiver.m_atom_data.val();
        self.atomics.s_op_mask.next = self.receiver.m_atom_mask.val();
        self.atomics.s_op_compare.next = self.receiver.m_atom_compare.val();
        self.atomics.s_op_compare_mask.next = self.receiver.m_atom_compare_mask.val();
        self.atomics.s_op_fresh.next = self.receiver.m_atom_fresh.val();
        self.atomics.s_op_after.next = self.receiver.m_atom_after.val();
        self.atomics.done_count.next = self.receiver.plain_done.val();
        self.receiver.s_res_valid.next = self.atomics.m_res_valid.val();
        self.atomics.m_res_ready.next = self.receiver.s_res_ready.val();
        self.receiver.s_res_original.next = self.atomics.m_res_original.val();
        self.dma.s_wr_req_valid.next = self.writes.m_req_valid.val();
        self.writes.m_req_ready.next = self.dma.s_wr_req_ready.val();
        self.dma.s_wr_req_addr.next = self.writes.m_req_addr.val();
        self.dma.s_wr_req_len.next = self.writes.m_req_len.val();
        self.dma.s_wr_req_tag.next = self.writes.m_req_tag.val();
        self.dma.s_wr_axis_tdata.next = self.writes.m_axis_tdata.val();
        self.dma.s_wr_axis_tkeep.next = self.writes.m_axis_tkeep.val();
        self.dma.s_wr_axis_tlast.next = self.writes.m_axis_tlast.val();
        self.dma.s_wr_axis_tvalid.next = self.writes.m_axis_tvalid.val();
        self.writes.m_axis_tready.next = self.dma.s_wr_axis_tready.val();
        self.writes.s_done_valid.next = self.dma.m_wr_done_valid.val();
        self.writes.s_done_tag.next = self.dma.m_wr_done_tag.val();
        self.writes.s_done_error.next = self.dma.m_wr_done_error.val();

        // Completions and interrupts.
        self.cqs.cq_we.next = self.ctrl.cq_we.val();
        self.cqs.cq_waddr.next = self.ctrl.cq_waddr.val();
        self.cqs.cq_wdata.next = self.ctrl.cq_wdata.val();
        self.cqs.db_valid.next = self.ctrl.db_valid.val();
        self.cqs.db_kind.next = self.ctrl.db_kind.val();
        self.cqs.db_index.next = self.ctrl.db_index.val();
        self.cqs.db_value.next = self.ctrl.db_value.val();
        // (The receive engine's completions go first.)
        self.rx_cqe.next = self.receiver.m_cqe_valid.val();
        self.cqe_slice.s_valid.next = self.receiver.m_cqe_valid.val() | self.requester.m_cqe_valid.val();
        self.receiver.m_cqe_ready.next = self.cqe_slice.s_ready.val();
        self.requester.m_cqe_ready.next = self.cqe_slice.s_ready.val() & !self.rx_cqe.val();
        self.cqe_slice.s_data.next =
            bit_cast::<272, 256>(self.requester.m_cqe.val()) | (bit_cast::<272, CB>(self.requester.m_cqn.val()) << 256);
        if self.rx_cqe.val() {
            self.cqe_slice.s_data.next = bit_cast::<272, 256>(self.receiver.m_cqe.val())
                | (bit_cast::<272, CB>(self.receiver.m_cqn.val()) << 256);
        }
        self.cqs.s_valid.next = self.cqe_slice.m_valid.val();
        self.cqe_slice.m_ready.next = self.cqs.s_ready.val();
        self.cqs.s_cqe.next = self.cqe_slice.m_data.val().get_bits::<256>(0);
        self.cqs.s_cqn.next = self.cqe_slice.m_data.val().get_bits::<CB>(256);
        if self.cqe_slice.s_valid.val() & self.cqe_slice.s_ready.val() {
            self.cqes_taken.d.next = self.cqes_taken.q.val() + 1;
            if self.rx_cqe.val() {
                self.rx_cqes_due.d.next = self.cqes_taken.q.val() + 1;
            }
        }
        // (Counts modulo 2^32: the difference's sign says whether `settled` is behind.)
        self.rx_cqes_behind.next = self.rx_cqes_due.q.val() - self.cqs.settled.val();
        self.receiver.s_cqes_written.next = (self.rx_cqes_behind.val() == 0) | self.rx_cqes_behind.val().get_bit(31);
        self.irq_valid.next = self.cqs.irq_valid.val();
        self.cqs.irq_ready.next = self.irq_ready.val();
        self.irq_vector.next = self.cqs.irq_vector.val();

        // The transmit requester: SQ fetch, WQE checks, segmentation, framing.
        self.sq.enable.next = self.ctrl.enable.val();
        self.sq.db_valid.next = self.ctrl.db_valid.val();
        self.sq.db_kind.next = self.ctrl.db_kind.val();
        self.sq.db_index.next = self.ctrl.db_index.val();
        self.sq.db_value.next = self.ctrl.db_value.val();
        self.sq.qp_we.next = self.ctrl.qp_we.val();
        self.sq.qp_waddr.next = self.ctrl.qp_waddr.val();
        self.sq.qp_wdata.next = self.ctrl.qp_wdata.val();
        self.sq.qp_reset.next = self.ctrl.qp_reset.val();
        self.sq.qp_rts.next = self.ctrl.qp_rts.val();
        self.sq.qp_error.next = self.ctrl.qp_error.val();
        self.requester.s_valid.next = self.sq.m_valid.val();
        self.sq.m_ready.next = self.requester.s_ready.val();
        self.requester.s_wqe.next = self.sq.m_wqe.val();
        self.requester.s_qpn.next = self.sq.m_qpn.val();
        self.requester.s_ctx.next = self.sq.m_ctx.val();
        self.requester.s_error.next = self.sq.m_error.val();
        self.requester.s_ordered.next = self.sq.m_ordered.val();
        self.requester.qp_error.next = self.ctrl.qp_error.val();
        self.requester.qp_rts.next = self.ctrl.qp_rts.val();
        self.requester.qp_we.next = self.ctrl.qp_we.val();
        self.requester.qp_waddr.next = self.ctrl.qp_waddr.val();
        self.requester.qp_reset.next = self.ctrl.qp_reset.val();
        self.requester.mr_we.next = self.ctrl.mr_we.val();
        self.requester.mr_waddr.next = self.ctrl.mr_waddr.val();
        self.requester.mr_wdata.next = self.ctrl.mr_wdata.val();
        self.requester.mr_valid.next = self.ctrl.mr_valid.val();
        self.requester.reads_full.next = self.receiver.reads_full.val();
        self.receiver.order_qpn.next = self.requester.order_qpn.val();
        self.requester.order_done.next = self.receiver.order_done.val();
        // The Read or atomic a peer's Terminate names.
        self.requester.s_term_valid.next = self.receiver.m_term_valid.val();
        self.requester.s_term_qpn.next = self.receiver.m_term_qpn.val();
        self.requester.s_term_msn.next = self.receiver.m_term_msn.val();
        self.requester.s_term_status.next = self.receiver.m_term_status.val();
        // Segmenter jobs: the receive engine's (Read Responses, Terminates) go first, into
        // `job_slice` and from there to the segmenter; completions of the requester's
        // messages go back to it.
        self.rx_job.next = self.receiver.m_job_valid.val();
        self.job_slice.s_valid.next = self.receiver.m_job_valid.val() | self.requester.m_job_valid.val();
        self.receiver.m_job_ready.next = self.job_slice.s_ready.val();
        self.requester.m_job_ready.next = self.job_slice.s_ready.val() & !self.rx_job.val();
        self.job_tagged.next = self.requester.m_job_tagged.val();
        self.job_opcode.next = self.requester.m_job_opcode.val();
        self.job_stag.next = self.requester.m_job_stag.val();
        self.job_to.next = self.requester.m_job_to.val();
        self.job_qn.next = self.requester.m_job_qn.val();
        self.job_msn.next = self.requester.m_job_msn.val();
        self.job_addr.next = self.requester.m_job_addr.val();
        self.job_len.next = self.requester.m_job_len.val();
        self.job_inline.next = self.requester.m_job_inline.val();
        self.job_inline_len.next = self.requester.m_job_inline_len.val();
        self.job_mulpdu.next = self.requester.m_job_mulpdu.val();
        self.job_tag.next = bit_cast::<32, 16>(self.requester.m_job_conn.val())
            | (bit_cast::<32, 1>(self.requester.m_job_crc.val().into()) << 17_u64)
            | (bit_cast::<32, QB>(self.requester.m_job_qpn.val()) << 18_u64);
        if self.rx_job.val() {
            self.job_tagged.next = self.receiver.m_job_tagged.val();
            self.job_opcode.next = self.receiver.m_job_opcode.val();
            self.job_stag.next = self.receiver.m_job_stag.val();
            self.job_to.next = self.receiver.m_job_to.val();
            self.job_qn.next = self.receiver.m_job_qn.val();
            self.job_msn.next = self.receiver.m_job_msn.val();
            self.job_addr.next = self.receiver.m_job_addr.val();
            self.job_len.next = self.receiver.m_job_len.val();
            self.job_inline.next = self.receiver.m_job_inline.val();
            self.job_inline_len.next = self.receiver.m_job_inline_len.val();
            self.job_mulpdu.next = self.receiver.m_job_mulpdu.val();
            self.job_tag.next = bit_cast::<32, 16>(self.receiver.m_job_conn.val())
                | self.tag_rx_job.val()
                | (bit_cast::<32, 1>(self.receiver.m_job_crc.val().into()) << 17_u64)
                | (bit_cast::<32, QB>(self.receiver.m_job_qpn.val()) << 18_u64);
        }
        self.job_slice.s_data.next = bit_cast::<731, 1>(self.job_tagged.val().into())
            | (bit_cast::<731, 4>(self.job_opcode.val()) << 1_u64)
            | (bit_cast::<731, 32>(self.job_stag.val()) << 5_u64)
            | (bit_cast::<731, 64>(self.job_to.val()) << 37_u64)
            | (bit_cast::<731, 32>(self.job_qn.val()) << 101_u64)
            | (bit_cast::<731, 32>(self.job_msn.val()) << 133_u64)
            | (bit_cast::<731, 64>(self.job_addr.val()) << 165_u64)
            | (bit_cast::<731, 32>(self.job_len.val()) << 229_u64)
            | (bit_cast::<731, 416>(self.job_inline.val()) << 261_u64)
            | (bit_cast::<731, 6>(self.job_inline_len.val()) << 677_u64)
            | (bit_cast::<731, 16>(self.job_mulpdu.val()) << 683_u64)
            | (bit_cast::<731, 32>(self.job_tag.val()) << 699_u64);
        self.segmenter.s_job_valid.next = self.job_slice.m_valid.val();
        self.job_slice.m_ready.next = self.segmenter.s_job_ready.val();
        self.segmenter.s_job_tagged.next = self.job_slice.m_data.val().get_bit(0);
        self.segmenter.s_job_opcode.next = self.job_slice.m_data.val().get_bits::<4>(1);
        self.segmenter.s_job_stag.next = self.job_slice.m_data.val().get_bits::<32>(5);
        self.segmenter.s_job_to.next = self.job_slice.m_data.val().get_bits::<64>(37);
        self.segmenter.s_job_qn.next = self.job_slice.m_data.val().get_bits::<32>(101);
        self.segmenter.s_job_msn.next = self.job_slice.m_data.val().get_bits::<32>(133);
        self.segmenter.s_job_addr.next = self.job_slice.m_data.val().get_bits::<64>(165);
        self.segmenter.s_job_len.next = self.job_slice.m_data.val().get_bits::<32>(229);
        self.segmenter.s_job_inline.next = self.job_slice.m_data.val().get_bits::<416>(261);
        self.segmenter.s_job_inline_len.next = self.job_slice.m_data.val().get_bits::<6>(677);
        self.segmenter.s_job_mulpdu.next = self.job_slice.m_data.val().get_bits::<16>(683);
        self.segmenter.s_job_tag.next = self.job_slice.m_data.val().get_bits::<32>(699);
        // The rest of a message whose QP was reset is dropped: its memory may be freed.
        // (A QP in ERROR still sends its Terminate.) Decided a cycle ahead, for the tag the
        // segmenter walks next cycle, from the QP states of this one: a reset reaches the
        // walk a cycle after it takes effect, well inside the DMA fence's settling time
        // (a payload read asked for meanwhile is waited for).
        self.seg_drop.d.next = !((self.ctrl.qp_rts.val() | self.ctrl.qp_error.val())
            & (self.one_q.val() << bit_cast::<Q, QB>(self.segmenter.walk_tag_next.val().get_bits::<QB>(18))))
        .any();
        self.segmenter.drop.next = self.seg_drop.q.val();
        self.requester.s_done_valid.next =
            self.segmenter.m_done_valid.val() & !(self.segmenter.m_done_tag.val() & self.tag_rx_job.val()).any();
        self.receiver.s_job_done.next =
            self.segmenter.m_done_valid.val() & (self.segmenter.m_done_tag.val() & self.tag_rx_job.val()).any();
        self.receiver.s_read_valid.next = self.requester.m_read_valid.val();
        self.receiver.s_read_qpn.next = self.requester.m_read_qpn.val();
        self.receiver.s_read_entry.next = self.requester.m_read_entry.val();
        self.framer.crc_en.next = self.tx_conns.m_data.val().get_bit(16);
        self.tx_slice.s_valid.next = self.segmenter.m_axis_tvalid.val();
        self.tx_slice.s_data.next = bit_cast::<121, 64>(self.segmenter.m_axis_tdata.val())
            | (bit_cast::<121, 8>(self.segmenter.m_axis_tkeep.val()) << 64_u64)
            | (bit_cast::<121, 1>(self.segmenter.m_axis_tlast.val().into()) << 72_u64)
            | (bit_cast::<121, 16>(self.segmenter.m_axis_tuser.val()) << 73_u64)
            | (bit_cast::<121, 32>(self.segmenter.m_axis_tid.val()) << 89_u64);
        self.segmenter.m_axis_tready.next = self.tx_slice.s_ready.val();
        self.tx_tdata.next = self.tx_slice.m_data.val().get_bits::<64>(0);
        self.tx_tkeep.next = self.tx_slice.m_data.val().get_bits::<8>(64);
        self.tx_tlast.next = self.tx_slice.m_data.val().get_bit(72);
        self.tx_tuser.next = self.tx_slice.m_data.val().get_bits::<16>(73);
        self.tx_tid.next = self.tx_slice.m_data.val().get_bits::<32>(89);
        // Markers: each FPDU starts at its QP's own stream position, with its QP's setting,
        // and leaves the position where it ends for the QP's next FPDU. A QP written in
        // RESET starts over at 0 (the first FPDU of Full Operation has a marker in front).
        self.tx_fpdus.s_data.next = self.tx_tid.val().get_bits::<QB>(18);
        self.tx_fpdus.s_valid.next = self.tx_conns.s_valid.val();
        self.tx_fpdus.m_ready.next = self.framer.fpdu_start.val();
        // The head's marker setting and position are selected into registers; the framer
        // holds the FPDU's start until they are the head's (two cycles after it changed;
        // an FPDU of three beats or more, every one at W = 8, never waits for the next),
        // unless the head is the next FPDU of the QP it started last (`tx_chain`).
        self.tx_positions.read_qp.next = self.tx_fpdus.m_data.val();
        self.tx_next_markers.d.next =
            (self.ctrl.qp_markers_tx.val() & (self.one_q.val() << bit_cast::<Q, QB>(self.tx_fpdus.m_data.val()))).any();
        self.tx_head_seen.d.next = self.tx_fpdus.m_valid.val() & !self.framer.fpdu_start.val();
        self.tx_next_held.d.next = self.tx_head_seen.q.val() & !self.framer.fpdu_start.val();
        self.tx_qp_written.next = self.ctrl.qp_we.val() & (self.ctrl.qp_waddr.val() == self.tx_qp.q.val());
        self.tx_chain.d.next = self.tx_fpdus.m_valid.val()
            & !self.framer.fpdu_start.val()
            & (self.tx_fpdus.m_data.val() == self.tx_qp.q.val())
            & !self.tx_qp_touched.q.val()
            & !self.tx_qp_written.val();
        if self.tx_qp_written.val() {
            self.tx_qp_touched.d.next = true;
        }
        if self.framer.fpdu_start.val() {
            self.tx_qp_touched.d.next =
                self.ctrl.qp_we.val() & (self.ctrl.qp_waddr.val() == self.tx_fpdus.m_data.val());
        }
        if self.reset_q.q.val() {
            self.tx_head_seen.d.next = false;
            self.tx_next_held.d.next = false;
            self.tx_chain.d.next = false;
            self.tx_qp_touched.d.next = true;
        }
        self.framer.markers_en.next = self.tx_next_markers.q.val();
        self.framer.fpdu_load.next = true;
        self.framer.fpdu_position.next = bit_cast::<16, 9>(self.tx_positions.held.val());
        self.framer.fpdu_wait.next = !self.tx_next_held.q.val() | self.tx_end_write.q.val() | self.tx_clear.q.val();
        self.framer.fpdu_chain.next = self.tx_chain.q.val();
        self.tx_ending.next = self.tx_qp.q.val();
        if self.framer.fpdu_start.val() {
            self.tx_qp.d.next = self.tx_fpdus.m_data.val();
            self.tx_ending.next = self.tx_fpdus.m_data.val();
        }
        self.tx_end_write.d.next = self.framer.fpdu_end.val();
        self.tx_end_qp.d.next = self.tx_ending.val();
        self.tx_end_value.d.next = self.framer.end_position.val().get_bits::<9>(0);
        self.tx_clear.d.next = self.ctrl.qp_we.val() & self.ctrl.qp_reset.val();
        self.tx_clear_qp.d.next = self.ctrl.qp_waddr.val();
        if self.reset_q.q.val() {
            self.tx_end_write.d.next = false;
            self.tx_clear.d.next = false;
        }
        self.tx_positions.write.next = self.tx_end_write.q.val();
        self.tx_positions.write_qp.next = self.tx_end_qp.q.val();
        self.tx_positions.write_value.next = self.tx_end_value.q.val();
        self.tx_positions.clear.next = self.tx_clear.q.val();
        self.tx_positions.clear_qp.next = self.tx_clear_qp.q.val();
        // Each ULPDU's CONN_ID (the segmenter's job tag without the engine bit) is queued
        // at its first beat and leaves with its FPDU's last.
        self.tx_conns.s_data.next = bit_cast::<17, 16>(self.tx_tid.val().get_bits::<16>(0))
            | (bit_cast::<17, 1>((self.tx_tid.val() & self.tag_crc.val()).any().into()) << 16);
        self.tx_conns.s_valid.next = self.tx_slice.m_valid.val()
            & self.framer.s_axis_tready.val()
            & self.tx_fpdus.s_ready.val()
            & self.tx_first.q.val();
        self.framer.s_axis_tdata.next = self.tx_tdata.val();
        self.framer.s_axis_tkeep.next = self.tx_tkeep.val();
        self.framer.s_axis_tvalid.next = self.tx_slice.m_valid.val()
            & ((self.tx_conns.s_ready.val() & self.tx_fpdus.s_ready.val()) | !self.tx_first.q.val());
        self.framer.s_axis_tlast.next = self.tx_tlast.val();
        self.framer.s_axis_tuser.next = self.tx_tuser.val();
        self.tx_slice.m_ready.next = self.framer.s_axis_tready.val()
            & ((self.tx_conns.s_ready.val() & self.tx_fpdus.s_ready.val()) | !self.tx_first.q.val());
        if self.tx_slice.m_valid.val() & self.tx_slice.m_ready.val() {
            self.tx_first.d.next = self.tx_tlast.val();
        }
        // The TX stream: to the port, or into the TX stream ring when it is on.
        self.framed_slice.s_data.next = bit_cast::<89, 64>(self.framer.m_axis_tdata.val())
            | (bit_cast::<89, 8>(self.framer.m_axis_tkeep.val()) << 64_u64)
            | (bit_cast::<89, 1>(self.framer.m_axis_tlast.val().into()) << 72_u64)
            | (bit_cast::<89, 16>(self.tx_conns.m_data.val().get_bits::<16>(0)) << 73_u64);
        self.framed_slice.s_valid.next = self.framer.m_axis_tvalid.val();
        self.framer.m_axis_tready.next = self.framed_slice.s_ready.val();
        self.tx_conns.m_ready.next =
            self.framer.m_axis_tvalid.val() & self.framed_slice.s_ready.val() & self.framer.m_axis_tlast.val();
        self.tx_ring.s_tx_tdata.next = self.framed_slice.m_data.val().get_bits::<64>(0);
        self.tx_ring.s_tx_tkeep.next = self.framed_slice.m_data.val().get_bits::<8>(64);
        self.tx_ring.s_tx_tlast.next = self.framed_slice.m_data.val().get_bit(72);
        self.tx_ring.s_tx_tuser.next = self.framed_slice.m_data.val().get_bits::<16>(73);
        self.tx_ring.s_tx_tvalid.next = self.framed_slice.m_valid.val();
        self.framed_slice.m_ready.next = self.tx_ring.s_tx_tready.val();
        self.m_axis_tx_tdata.next = self.tx_ring.m_tx_tdata.val();
        self.m_axis_tx_tkeep.next = self.tx_ring.m_tx_tkeep.val();
        self.m_axis_tx_tlast.next = self.tx_ring.m_tx_tlast.val();
        self.m_axis_tx_tvalid.next = self.tx_ring.m_tx_tvalid.val();
        self.m_axis_tx_tuser.next = self.tx_ring.m_tx_tuser.val();
        self.tx_ring.m_tx_tready.next = self.m_axis_tx_tready.val();
        // The RX stream: from the port, or from the RX stream ring when it is on.
        self.rx_ring.s_rx_tdata.next = self.s_axis_rx_tdata.val();
        self.rx_ring.s_rx_tkeep.next = self.s_axis_rx_tkeep.val();
        self.rx_ring.s_rx_tlast.next = self.s_axis_rx_tlast.val();
        self.rx_ring.s_rx_tuser.next = self.s_axis_rx_tuser.val();
        self.rx_ring.s_rx_tvalid.next = self.s_axis_rx_tvalid.val();
        self.s_axis_rx_tready.next = self.rx_ring.s_rx_tready.val();
        // The rings' registers.
        self.tx_ring.page.next = self.tx_ring_page.val();
        self.rx_ring.page.next = self.rx_ring_page.val();
        self.tx_ring.wr_en.next = self.ctrl.ext_wr_en.val();
        self.tx_ring.wr_addr.next = self.ctrl.ext_wr_addr.val();
        self.tx_ring.wr_data.next = self.ctrl.ext_wr_data.val();
        self.tx_ring.rd_addr.next = self.ctrl.ext_rd_addr.val();
        self.rx_ring.wr_en.next = self.ctrl.ext_wr_en.val();
        self.rx_ring.wr_addr.next = self.ctrl.ext_wr_addr.val();
        self.rx_ring.wr_data.next = self.ctrl.ext_wr_data.val();
        self.rx_ring.rd_addr.next = self.ctrl.ext_rd_addr.val();
        self.ctrl.ext_rd_data.next = self.tx_ring.rd_data.val() | self.rx_ring.rd_data.val();

        // The receive side, one packet per FPDU. Each packet's QP is queued at its first beat
        // twice: taken from one queue when its ULPDU (or its failure) leaves the deframer
        // (which may be before the packet's last beat is in, for a packet that runs on past
        // its FPDU), and from the other when the deframer parses the FPDU, which then runs with
        // the QP's CRC and marker settings and from the QP's own marker distance (kept per
        // QP as for transmit). The deframer gives exactly one ULPDU per packet, whatever the
        // packet holds, so the queues stay in step with it; it never waits for octets past
        // the end of a packet it has, so they never hold it up either. A bad FPDU (RFC 5044
        // §8: CRC 0x02, marker 0x03; out of step with its packet or longer than the RX
        // buffer holds, 0x05, RFC 6581 §8) reaches RdmapRx as a failure packet in order
        // with the ULPDUs, and fails its own QP only.
        // The next FPDU's QP waits in `rx_next_qp`, refilled as the deframer parses it.
        self.rx_fpdus.m_ready.next = !self.rx_next_valid.q.val() | self.deframer.fpdu_start.val();
        self.rx_next_early.next = self.rx_fpdus.m_valid.val() & !self.rx_next_valid.q.val();
        self.rx_next_read.next = self.rx_next_qp.q.val();
        if self.rx_next_early.val() {
            self.rx_next_read.next = self.rx_fpdus.m_data.val();
        }
        self.rx_next_ready.d.next =
            (self.rx_next_valid.q.val() & !self.deframer.fpdu_start.val()) | self.rx_next_early.val();
        self.rx_next_held.d.next = self.rx_next_ready.q.val() & !self.deframer.fpdu_start.val();
        if self.deframer.fpdu_start.val() {
            self.rx_next_valid.d.next = false;
        }
        if self.rx_fpdus.m_valid.val() & self.rx_fpdus.m_ready.val() {
            self.rx_next_qp.d.next = self.rx_fpdus.m_data.val();
            self.rx_next_valid.d.next = true;
        }
        if self.reset_q.q.val() {
            self.rx_next_valid.d.next = false;
            self.rx_next_ready.d.next = false;
            self.rx_next_held.d.next = false;
        }
        self.rx_positions.read_qp.next = self.rx_next_read.val();
        self.rx_next_markers.d.next =
            (self.ctrl.qp_markers_rx.val() & (self.one_q.val() << bit_cast::<Q, QB>(self.rx_next_read.val()))).any();
        self.rx_next_crc.d.next =
            (self.ctrl.qp_crc.val() & (self.one_q.val() << bit_cast::<Q, QB>(self.rx_next_qp.q.val()))).any();
        self.rx_held_markers.d.next = self.rx_next_markers.q.val();
        self.deframer.markers_en.next = self.rx_held_markers.q.val();
        self.deframer.crc_en.next = self.rx_next_crc.q.val();
        self.deframer.fpdu_load.next = true;
        self.deframer.fpdu_to_marker.next = bit_cast::<16, 9>(self.rx_positions.held.val());
        self.deframer.fpdu_wait.next = !self.rx_next_held.q.val();
        if self.deframer.fpdu_start.val() {
            self.rx_qp.d.next = self.rx_next_qp.q.val();
        }
        self.rx_positions.write.next = self.deframer.fpdu_end.val();
        // (An FPDU ends at its last beat's fire, never in the cycle it starts.)
        self.rx_positions.write_qp.next = self.rx_qp.q.val();
        self.rx_positions.write_value.next = self.deframer.end_to_marker.val().get_bits::<9>(0);
        self.rx_positions.clear.next = self.ctrl.qp_we.val() & self.ctrl.qp_reset.val();
        self.rx_positions.clear_qp.next = self.ctrl.qp_waddr.val();
        self.rx_open.next = ((self.rx_qps.s_ready.val() & self.rx_fpdus.s_ready.val()) | !self.rx_first.q.val())
            & !self.reset_q.q.val();
        self.rx_slice.s_data.next = bit_cast::<89, 64>(self.rx_ring.m_rx_tdata.val())
            | (bit_cast::<89, 8>(self.rx_ring.m_rx_tkeep.val()) << 64_u64)
            | (bit_cast::<89, 1>(self.rx_ring.m_rx_tlast.val().into()) << 72_u64)
            | (bit_cast::<89, 16>(self.rx_ring.m_rx_tuser.val()) << 73_u64);
        self.rx_slice.s_valid.next = self.rx_ring.m_rx_tvalid.val();
        self.rx_ring.m_rx_tready.next = self.rx_slice.s_ready.val();
        self.rx_qps.s_data.next = self.rx_slice.m_data.val().get_bits::<16>(73);
        self.rx_qps.s_valid.next = self.rx_slice.m_valid.val()
            & self.rx_first.q.val()
            & self.deframer.s_axis_tready.val()
            & self.rx_open.val();
        self.rx_fpdus.s_data.next = self.rx_slice.m_data.val().get_bits::<QB>(73);
        self.rx_fpdus.s_valid.next = self.rx_slice.m_valid.val()
            & self.rx_first.q.val()
            & self.deframer.s_axis_tready.val()
            & self.rx_open.val();
        if self.rx_slice.m_valid.val() & self.deframer.s_axis_tready.val() & self.rx_open.val() {
            self.rx_first.d.next = self.rx_slice.m_data.val().get_bit(72);
        }
        self.deframer.s_axis_tdata.next = self.rx_slice.m_data.val().get_bits::<64>(0);
        self.deframer.s_axis_tkeep.next = self.rx_slice.m_data.val().get_bits::<8>(64);
        self.deframer.s_axis_tlast.next = self.rx_slice.m_data.val().get_bit(72);
        self.deframer.s_axis_tvalid.next = self.rx_slice.m_valid.val() & self.rx_open.val();
        self.rx_slice.m_ready.next = self.deframer.s_axis_tready.val() & self.rx_open.val();
        self.fpdu_slice.s_data.next = bit_cast::<81, 64>(self.deframer.m_axis_tdata.val())
            | (bit_cast::<81, 8>(self.deframer.m_axis_tkeep.val()) << 64_u64)
            | (bit_cast::<81, 1>(self.deframer.m_axis_tlast.val().into()) << 72_u64)
            | (bit_cast::<81, 8>(self.deframer.m_axis_tuser.val()) << 73_u64);
        self.fpdu_slice.s_valid.next = self.deframer.m_axis_tvalid.val();
        self.deframer.m_axis_tready.next = self.fpdu_slice.s_ready.val();
        self.rx_buffer.s_axis_tdata.next = self.fpdu_slice.m_data.val().get_bits::<64>(0);
        self.rx_buffer.s_axis_tkeep.next = self.fpdu_slice.m_data.val().get_bits::<8>(64);
        self.rx_buffer.s_axis_tlast.next = self.fpdu_slice.m_data.val().get_bit(72);
        self.rx_buffer.s_axis_tuser.next = self.fpdu_slice.m_data.val().get_bits::<8>(73);
        self.rx_buffer.s_axis_tvalid.next = self.fpdu_slice.m_valid.val();
        self.fpdu_slice.m_ready.next = self.rx_buffer.s_axis_tready.val();
        // (The packet's QP leaves its queue with the packet's last beat into the buffer.)
        self.rx_buffer.s_conn.next = self.rx_qps.m_data.val();
        self.rx_qps.m_ready.next = self.fpdu_slice.m_valid.val()
            & self.rx_buffer.s_axis_tready.val()
            & self.fpdu_slice.m_data.val().get_bit(72);
        self.ulpdu_slice.s_data.next = bit_cast::<105, 64>(self.rx_buffer.m_axis_tdata.val())
            | (bit_cast::<105, 1>(self.rx_buffer.m_axis_tlast.val().into()) << 64_u64)
            | (bit_cast::<105, DESC_BITS>(self.rx_buffer.m_axis_tuser.val()) << 65_u64);
        self.ulpdu_slice.s_valid.next = self.rx_buffer.m_axis_tvalid.val();
        self.rx_buffer.m_axis_tready.next = self.ulpdu_slice.s_ready.val();
        self.receiver.s_axis_tdata.next = self.ulpdu_slice.m_data.val().get_bits::<64>(0);
        self.receiver.s_axis_tlast.next = self.ulpdu_slice.m_data.val().get_bit(64);
        self.receiver.s_axis_tuser.next = self.ulpdu_slice.m_data.val().get_bits::<DESC_BITS>(65);
        self.receiver.s_axis_tvalid.next = self.ulpdu_slice.m_valid.val();
        self.ulpdu_slice.m_ready.next = self.receiver.s_axis_tready.val();
        self.receiver.qp_we.next = self.ctrl.qp_we.val();
        self.receiver.qp_waddr.next = self.ctrl.qp_waddr.val();
        self.receiver.qp_wdata.next = self.ctrl.qp_wdata.val();
        self.receiver.qp_reset.next = self.ctrl.qp_reset.val();
        self.receiver.qp_rts.next = self.ctrl.qp_rts.val();
        self.receiver.qp_error.next = self.ctrl.qp_error.val();
        self.receiver.db_valid.next = self.ctrl.db_valid.val();
        self.receiver.db_kind.next = self.ctrl.db_kind.val();
        self.receiver.db_index.next = self.ctrl.db_index.val();
        self.receiver.mr_we.next = self.ctrl.mr_we.val();
        self.receiver.mr_waddr.next = self.ctrl.mr_waddr.val();
        self.receiver.mr_wdata.next = self.ctrl.mr_wdata.val();
        self.receiver.mr_valid.next = self.ctrl.mr_valid.val();
        self.rq.db_valid.next = self.ctrl.db_valid.val();
        self.rq.db_kind.next = self.ctrl.db_kind.val();
        self.rq.db_index.next = self.ctrl.db_index.val();
        self.rq.db_value.next = self.ctrl.db_value.val();
        self.rq.qp_we.next = self.ctrl.qp_we.val();
        self.rq.qp_waddr.next = self.ctrl.qp_waddr.val();
        self.rq.qp_wdata.next = self.ctrl.qp_wdata.val();
        self.rq.qp_reset.next = self.ctrl.qp_reset.val();
        self.rq.s_valid.next = self.receiver.m_rq_valid.val();
        self.receiver.m_rq_ready.next = self.rq.s_ready.val();
        self.rq.s_qpn.next = self.receiver.m_rq_qpn.val();
        self.receiver.s_rq_valid.next = self.rq.m_valid.val();
        self.rq.m_ready.next = self.receiver.s_rq_ready.val();
        self.receiver.s_rq_posted.next = self.rq.m_posted.val();
        self.receiver.s_rq_wqe.next = self.rq.m_wqe.val();
        self.receiver.s_rq_error.next = self.rq.m_error.val();
        if self.reset_q.q.val() {
            self.tx_first.d.next = true;
            self.rx_first.d.next = true;
            self.cqes_taken.d.next = 0.into();
            self.rx_cqes_due.d.next = 0.into();
        }
    }
}
