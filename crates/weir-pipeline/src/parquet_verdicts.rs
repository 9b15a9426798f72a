//! The `--verdicts` file as Parquet (chosen by a name ending in
//! `.parquet`): the verdict table's batches written as they fill, in row
//! groups of one batch each, so a run's memory stays bounded.

use crate::labels::Labels;
use crate::output::Output;
use crate::sink::{Decided, Out};
use crate::verdict_table::{self, VerdictColumns, BATCH_ROWS};
use parquet::arrow::ArrowWriter;
use parquet::basic::Compression;
use parquet::file::properties::WriterProperties;
use std::io::{self, Write};
use weir_io::output::OutputError;

/// Whether a `--verdicts` name asks for Parquet.
pub fn wants_parquet(name: &str) -> bool {
    name.ends_with(".parquet")
}

/// A Parquet verdict file being written.
pub struct ParquetVerdicts {
    columns: VerdictColumns,
    out: Output<ArrowWriter<Out>>,
}

fn io_error(e: impl Into<Box<dyn std::error::Error + Send + Sync>>) -> io::Error {
    io::Error::other(e)
}

impl ParquetVerdicts {
    pub fn new(out: Output<Out>) -> Result<ParquetVerdicts, OutputError> {
        let props = WriterProperties::builder()
            .set_compression(Compression::SNAPPY)
            .set_max_row_group_row_count(Some(BATCH_ROWS))
            .build();
        let schema = verdict_table::schema();
        let out = out.map(|w| ArrowWriter::try_new(w, schema, Some(props)).map_err(io_error))?;
        Ok(ParquetVerdicts {
            columns: VerdictColumns::new(),
            out,
        })
    }

    // Per packet, inside the sink.
    #[inline(always)]
    pub fn packet(
        &mut self,
        index: u64,
        x: &Decided<'_>,
        labels: &Labels,
    ) -> Result<(), OutputError> {
        self.columns.push(index, x, labels);
        if self.columns.len() >= BATCH_ROWS {
            self.write_batch()?;
        }
        Ok(())
    }

    #[cold]
    fn write_batch(&mut self) -> Result<(), OutputError> {
        let batch = self
            .columns
            .finish()
            .map_err(|e| self.out.fail(io_error(e)))?;
        let res = self.out.w.write(&batch).map_err(io_error);
        res.map_err(|e| self.out.fail(e))
    }

    /// Writes what is left and the file's footer, and flushes.
    pub fn finish(&mut self) -> Result<(), OutputError> {
        if !self.columns.is_empty() {
            self.write_batch()?;
        }
        let res = self.out.w.finish().map_err(io_error);
        let res = res.and_then(|_| self.out.w.inner_mut().flush());
        res.map_err(|e| self.out.fail(e))
    }

    pub fn commit(self) -> Result<(), OutputError> {
        self.out.commit()
    }

    pub fn discard(self) -> Option<String> {
        self.out.discard()
    }
}
