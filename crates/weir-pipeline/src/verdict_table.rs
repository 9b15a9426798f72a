//! Verdicts as a table: one row per decided packet, gathered in Arrow
//! column builders and cut into record batches of [`BATCH_ROWS`]; the
//! Parquet `--verdicts` file and the Python bindings' `verdicts` table
//! are both made of these batches. A row costs no allocation beyond the
//! builders' amortised growth; the addresses are the only text formatted
//! per packet (into the builder's own buffer).

use crate::labels::Labels;
use crate::sink::{Decided, Sink};
use arrow_array::builder::{
    ArrayBuilder, StringBuilder, UInt16Builder, UInt32Builder, UInt64Builder, UInt8Builder,
};
use arrow_array::{ArrayRef, RecordBatch};
use arrow_schema::{ArrowError, DataType, Field, Schema, SchemaRef};
use std::fmt::Write as _;
use std::io;
use std::sync::{Arc, LazyLock};
use weir_engine::Engine;
use weir_io::output::OutputError;
use weir_io::Interface;
use weir_wire::Direction;

/// Rows per record batch: big enough that a batch's bookkeeping vanishes,
/// small enough that a run's memory stays a few MiB.
pub const BATCH_ROWS: usize = 1 << 16;

/// The columns, in order. `rule` is null where the CSV says `-` (non-IP
/// and malformed packets); `ip_version`, `src`, `dst` and `proto` are null
/// for a packet that is not IP (or not decoded as IP), `sport` and `dport`
/// for one without ports; `length` is the bytes the rule counters count
/// (the layer-3 length); `iface` is the capture's name for the interface.
static SCHEMA: LazyLock<SchemaRef> = LazyLock::new(|| {
    let col = |name, ty, nullable| Field::new(name, ty, nullable);
    Arc::new(Schema::new(vec![
        col("index", DataType::UInt64, false),
        col("ts_ns", DataType::UInt64, false),
        col("iface", DataType::Utf8, true),
        col("dir", DataType::Utf8, false),
        col("ip_version", DataType::UInt8, true),
        col("src", DataType::Utf8, true),
        col("dst", DataType::Utf8, true),
        col("proto", DataType::UInt8, true),
        col("sport", DataType::UInt16, true),
        col("dport", DataType::UInt16, true),
        col("length", DataType::UInt32, false),
        col("rule", DataType::UInt16, true),
        col("action", DataType::Utf8, false),
        col("note", DataType::Utf8, false),
    ]))
});

/// The verdict table's schema.
pub fn schema() -> SchemaRef {
    SCHEMA.clone()
}

/// Rows being gathered, one builder per column.
pub struct VerdictColumns {
    index: UInt64Builder,
    ts_ns: UInt64Builder,
    iface: StringBuilder,
    dir: StringBuilder,
    ip_version: UInt8Builder,
    src: StringBuilder,
    dst: StringBuilder,
    proto: UInt8Builder,
    sport: UInt16Builder,
    dport: UInt16Builder,
    length: UInt32Builder,
    rule: UInt16Builder,
    action: StringBuilder,
    note: StringBuilder,
}

impl Default for VerdictColumns {
    fn default() -> Self {
        Self::new()
    }
}

impl VerdictColumns {
    pub fn new() -> VerdictColumns {
        let n = BATCH_ROWS;
        let text = || StringBuilder::with_capacity(n, 8 * n);
        VerdictColumns {
            index: UInt64Builder::with_capacity(n),
            ts_ns: UInt64Builder::with_capacity(n),
            iface: text(),
            dir: text(),
            ip_version: UInt8Builder::with_capacity(n),
            src: text(),
            dst: text(),
            proto: UInt8Builder::with_capacity(n),
            sport: UInt16Builder::with_capacity(n),
            dport: UInt16Builder::with_capacity(n),
            length: UInt32Builder::with_capacity(n),
            rule: UInt16Builder::with_capacity(n),
            action: text(),
            note: text(),
        }
    }

    /// Rows gathered since the last batch.
    pub fn len(&self) -> usize {
        self.index.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Adds packet number `index` (from 1, as the CSV counts).
    // Per packet, inside the sink.
    #[inline(always)]
    pub fn push(&mut self, index: u64, x: &Decided<'_>, labels: &Labels) {
        let (f, p, d) = (x.frame, x.packet, x.decision);
        self.index.append_value(index);
        self.ts_ns.append_value(f.ts_ns);
        let name = x
            .ifaces
            .get(f.iface as usize)
            .and_then(|i| i.name.as_deref());
        self.iface.append_option(name);
        self.dir.append_value(match p.direction {
            Direction::Out => "out",
            _ => "in",
        });
        if p.is_ip() {
            self.ip_version.append_value(p.ip_version);
            // Writing into a builder's buffer cannot fail.
            let _ = write!(self.src, "{}", p.src_ip());
            self.src.append_value("");
            let _ = write!(self.dst, "{}", p.dst_ip());
            self.dst.append_value("");
            self.proto.append_value(p.proto);
        } else {
            self.ip_version.append_null();
            self.src.append_null();
            self.dst.append_null();
            self.proto.append_null();
        }
        if p.is_ip() && p.has_ports {
            self.sport.append_value(p.src_port);
            self.dport.append_value(p.dst_port);
        } else {
            self.sport.append_null();
            self.dport.append_null();
        }
        self.length.append_value(p.l3_len);
        let number = d.rule.map(|r| x.engine.program().rules[r].number);
        self.rule.append_option(number);
        let parts = labels.parts(d, p, x.engine);
        self.action.append_value(parts.action.as_str());
        self.note.append_value(parts.note.as_str());
    }

    /// The rows gathered so far as one record batch; the builders start
    /// over, empty.
    pub fn finish(&mut self) -> Result<RecordBatch, ArrowError> {
        let columns: Vec<ArrayRef> = vec![
            Arc::new(self.index.finish()),
            Arc::new(self.ts_ns.finish()),
            Arc::new(self.iface.finish()),
            Arc::new(self.dir.finish()),
            Arc::new(self.ip_version.finish()),
            Arc::new(self.src.finish()),
            Arc::new(self.dst.finish()),
            Arc::new(self.proto.finish()),
            Arc::new(self.sport.finish()),
            Arc::new(self.dport.finish()),
            Arc::new(self.length.finish()),
            Arc::new(self.rule.finish()),
            Arc::new(self.action.finish()),
            Arc::new(self.note.finish()),
        ];
        RecordBatch::try_new(schema(), columns)
    }
}

/// A sink that keeps the verdict table in memory, as record batches (the
/// Python bindings' `verdicts`).
pub struct VerdictTable {
    columns: VerdictColumns,
    labels: Labels,
    batches: Vec<RecordBatch>,
    index: u64,
}

impl VerdictTable {
    pub fn new(engine: &Engine) -> VerdictTable {
        VerdictTable {
            columns: VerdictColumns::new(),
            labels: Labels::new(engine),
            batches: Vec::new(),
            index: 0,
        }
    }

    /// The batches, the last one holding the rows after the last full one.
    pub fn into_batches(mut self) -> Result<Vec<RecordBatch>, ArrowError> {
        if !self.columns.is_empty() {
            let last = self.columns.finish()?;
            self.batches.push(last);
        }
        Ok(self.batches)
    }

    #[cold]
    fn cut(&mut self) -> Result<(), OutputError> {
        let batch = self.columns.finish();
        let batch = batch.map_err(|e| OutputError::new("verdicts", io::Error::other(e)))?;
        self.batches.push(batch);
        Ok(())
    }
}

impl Sink for VerdictTable {
    #[inline(always)]
    fn packet(&mut self, x: &Decided<'_>) -> Result<(), OutputError> {
        self.index += 1;
        self.columns.push(self.index, x, &self.labels);
        if self.columns.len() >= BATCH_ROWS {
            self.cut()?;
        }
        Ok(())
    }

    fn reloaded(&mut self, engine: &Engine) {
        self.labels = Labels::new(engine);
    }

    fn finish(&mut self, _: &[Interface]) -> Result<(), OutputError> {
        Ok(())
    }
}
