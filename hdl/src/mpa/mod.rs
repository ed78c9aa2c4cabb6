//! MPA (RFC 5044): CRC32c, FPDU framing (TX) and deframing (RX).
