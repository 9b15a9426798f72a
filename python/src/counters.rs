//! Per-rule counters as a record batch: rule, action, text, packets,
//! bytes, in rule order (the rows of `weir run --counters`).

use arrow_array::{ArrayRef, RecordBatch, StringArray, UInt16Array, UInt64Array};
use arrow_schema::{ArrowError, DataType, Field, Schema, SchemaRef};
use std::sync::Arc;
use weir_engine::Engine;

pub fn schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("rule", DataType::UInt16, false),
        Field::new("action", DataType::Utf8, false),
        Field::new("text", DataType::Utf8, false),
        Field::new("packets", DataType::UInt64, false),
        Field::new("bytes", DataType::UInt64, false),
    ]))
}

pub fn batch(engine: &Engine) -> Result<RecordBatch, ArrowError> {
    let rules = &engine.program().rules;
    let counters = engine.counters();
    let columns: Vec<ArrayRef> = vec![
        Arc::new(rules.iter().map(|r| r.number).collect::<UInt16Array>()),
        Arc::new(StringArray::from_iter_values(
            rules.iter().map(|r| r.action_text.as_str()),
        )),
        Arc::new(StringArray::from_iter_values(
            rules.iter().map(|r| r.text.as_str()),
        )),
        Arc::new(counters.iter().map(|c| c.packets).collect::<UInt64Array>()),
        Arc::new(counters.iter().map(|c| c.bytes).collect::<UInt64Array>()),
    ];
    RecordBatch::try_new(schema(), columns)
}
