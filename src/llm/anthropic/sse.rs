//! A small Server-Sent-Events decoder: bytes in, `(event, data)` pairs out.
//!
//! Handles what real servers and proxies send: `\n` or `\r\n` line ends, several `data:` lines
//! per event, `:` comment lines (keep-alives), events split across any number of network
//! chunks, and a missing final blank line at the end of the stream. A line or event larger than
//! [`MAX_EVENT_BYTES`] is an error rather than unbounded memory growth.

/// Upper bound on one event (a whole tool-call input may arrive in one `input_json_delta`).
pub(super) const MAX_EVENT_BYTES: usize = 32 * 1024 * 1024;

/// One dispatched event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct SseEvent {
    /// The `event:` field; empty when the server sent none.
    pub event: String,
    pub data: String,
}

#[derive(Debug, Default)]
pub(super) struct SseDecoder {
    buffer: Vec<u8>,
    event: String,
    data: String,
    has_data: bool,
    /// Bytes of `buffer` already searched for a line end (so a long line is scanned once).
    scanned: usize,
}

impl SseDecoder {
    /// Feeds bytes; returns the events they complete.
    pub fn push(&mut self, bytes: &[u8]) -> Result<Vec<SseEvent>, String> {
        self.buffer.extend_from_slice(bytes);
        let mut events = Vec::new();
        let mut start = 0;
        let mut from = self.scanned;
        while let Some(offset) = self.buffer[from..].iter().position(|b| *b == b'\n') {
            let end = from + offset;
            let mut line = &self.buffer[start..end];
            if line.last() == Some(&b'\r') {
                line = &line[..line.len() - 1];
            }
            let line = String::from_utf8_lossy(line).into_owned();
            start = end + 1;
            from = start;
            if let Some(event) = self.line(&line)? {
                events.push(event);
            }
        }
        self.buffer.drain(..start);
        self.scanned = self.buffer.len();
        if self.buffer.len() > MAX_EVENT_BYTES {
            return Err(format!(
                "the server sent a stream line longer than {MAX_EVENT_BYTES} bytes"
            ));
        }
        Ok(events)
    }

    /// The end of the stream: a last event without its blank line still counts.
    pub fn finish(&mut self) -> Result<Option<SseEvent>, String> {
        self.scanned = 0;
        let rest = String::from_utf8_lossy(&std::mem::take(&mut self.buffer)).into_owned();
        let rest = rest.trim_end_matches('\r');
        if !rest.is_empty()
            && let Some(event) = self.line(rest)?
        {
            return Ok(Some(event));
        }
        Ok(self.dispatch())
    }

    fn line(&mut self, line: &str) -> Result<Option<SseEvent>, String> {
        if line.is_empty() {
            return Ok(self.dispatch());
        }
        if line.starts_with(':') {
            return Ok(None);
        }
        let (field, value) = match line.split_once(':') {
            Some((f, v)) => (f, v.strip_prefix(' ').unwrap_or(v)),
            None => (line, ""),
        };
        match field {
            "event" => self.event = value.to_string(),
            "data" => {
                if self.has_data {
                    self.data.push('\n');
                }
                self.data.push_str(value);
                self.has_data = true;
                if self.data.len() > MAX_EVENT_BYTES {
                    return Err(format!(
                        "the server sent a stream event larger than {MAX_EVENT_BYTES} bytes"
                    ));
                }
            }
            _ => {}
        }
        Ok(None)
    }

    fn dispatch(&mut self) -> Option<SseEvent> {
        let event = std::mem::take(&mut self.event);
        let data = std::mem::take(&mut self.data);
        let had = std::mem::take(&mut self.has_data);
        (had || !event.is_empty()).then_some(SseEvent { event, data })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(event: &str, data: &str) -> SseEvent {
        SseEvent {
            event: event.into(),
            data: data.into(),
        }
    }

    #[test]
    fn events_split_anywhere() {
        let text = "event: ping\ndata: {\"type\":\"ping\"}\n\n: keep-alive\r\nevent: a\r\ndata: 1\r\ndata: 2\r\n\r\n";
        for split in 0..text.len() {
            let mut d = SseDecoder::default();
            let mut got = d.push(&text.as_bytes()[..split]).unwrap();
            got.extend(d.push(&text.as_bytes()[split..]).unwrap());
            assert_eq!(d.finish().unwrap(), None);
            assert_eq!(
                got,
                vec![ev("ping", "{\"type\":\"ping\"}"), ev("a", "1\n2")],
                "split at {split}"
            );
        }
    }

    #[test]
    fn last_event_without_blank_line_and_invalid_utf8() {
        let mut d = SseDecoder::default();
        assert!(d.push(b"event: x\ndata: \xff\xfe").unwrap().is_empty());
        assert_eq!(d.finish().unwrap(), Some(ev("x", "\u{fffd}\u{fffd}")));
        let mut d = SseDecoder::default();
        assert_eq!(
            d.push(b"data:no-space\n\n").unwrap(),
            vec![ev("", "no-space")]
        );
    }

    #[test]
    fn huge_lines_are_refused() {
        let mut d = SseDecoder::default();
        let chunk = vec![b'a'; 1024 * 1024];
        let mut failed = false;
        for _ in 0..40 {
            if d.push(&chunk).is_err() {
                failed = true;
                break;
            }
        }
        assert!(failed, "an endless line must be refused");
    }
}
