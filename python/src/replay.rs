//! One replay: a capture through `weir_pipeline::run`, the loop `weir run`
//! uses, into an in-memory verdict table or nowhere; then the counters and
//! the closing summary, as `weir run` prints them.

use arrow_array::RecordBatch;
use std::io::{Cursor, Read};

use weir_engine::Engine;
use weir_io::CaptureReader;
use weir_pipeline::report::Summary;
use weir_pipeline::sink::Discard;
use weir_pipeline::verdict_table::VerdictTable;
use weir_pipeline::{FileSource, Placement, Sink};

/// Where the capture comes from.
pub enum Input {
    Path(String),
    Bytes(Vec<u8>),
}

/// What a replay gives back.
pub struct Replayed {
    pub engine: Engine,
    pub verdicts: Option<Vec<RecordBatch>>,
}

/// A replay that failed: the message `weir run` prints after `weir: `.
pub struct Failed(pub String);

/// Replays `input` through a fresh replica of `engine`; `me` places
/// packets whose capture gives no direction, as `--me` does.
pub fn replay(
    engine: &Engine,
    me: &[std::net::IpAddr],
    input: Input,
    verdicts: bool,
) -> Result<Replayed, Failed> {
    let (reader, name): (Box<dyn Read + Send>, String) = match input {
        Input::Path(p) => {
            let r = weir_io::open_input(p.as_ref()).map_err(|e| Failed(format!("{p}: {e}")))?;
            (r, p)
        }
        Input::Bytes(b) => (Box::new(Cursor::new(b)), "<bytes>".to_owned()),
    };
    let reader = CaptureReader::new(reader).map_err(|e| Failed(format!("{name}: {e}")))?;
    let source = FileSource::new(reader, name);
    let mut engine = engine.replica();
    let place = Placement::new(None, me, None);
    if verdicts {
        let table = VerdictTable::new(&engine);
        let table = run(source, &mut engine, &place, table)?;
        let batches = table.into_batches().map_err(|e| Failed(e.to_string()))?;
        Ok(Replayed {
            engine,
            verdicts: Some(batches),
        })
    } else {
        run(source, &mut engine, &place, Discard)?;
        Ok(Replayed {
            engine,
            verdicts: None,
        })
    }
}

fn run<R: Read, S: Sink>(
    mut source: FileSource<R>,
    engine: &mut Engine,
    place: &Placement,
    sink: S,
) -> Result<S, Failed> {
    let (sink, ended) = weir_pipeline::run::whole(&mut source, engine, place, sink)
        .map_err(|e| Failed(e.to_string()))?;
    match ended.input_error {
        Some(why) => Err(Failed(why)),
        None => Ok(sink),
    }
}

/// The closing summary's numbers.
pub fn summary(engine: &Engine) -> Summary {
    Summary::of(engine)
}
