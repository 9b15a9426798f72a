//! `weir gen`: a seeded, reproducible trace written as pcap.

use crate::cli::GenArgs;
use crate::outputs;
use crate::{Failure, Progress};
use weir_gen::{GenConfig, Generator};
use weir_io::PcapWriter;
use weir_wire::LinkType;

pub fn gen(args: &GenArgs) -> Result<(), Failure> {
    let mut out = outputs::open(&args.output)?
        .map(|w| PcapWriter::new(w, LinkType::ETHERNET, 65535, args.nanos))?;
    let mut generator = Generator::new(GenConfig {
        seed: args.seed,
        count: args.count,
        malformed_per_mille: args.malformed_per_mille,
        ..GenConfig::default()
    });
    let mut progress = Progress::new(0);
    let mut n = 0u64;
    while let Some(f) = generator.next_frame() {
        let res = out.w.write_frame(f.ts_ns, f.data.len() as u32, f.data);
        res.map_err(|e| out.fail(e))?;
        n += 1;
        if n & 0xffff == 0 {
            progress.update(n);
        }
    }
    progress.finish();
    out.w.flush().map_err(|e| out.fail(e))?;
    Ok(out.commit()?)
}
