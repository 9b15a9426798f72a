//! `weir gen`: a seeded, reproducible trace written as pcap.

use crate::cli::GenArgs;
use crate::setup::create_output;
use crate::{Failure, Progress};
use weir_gen::{GenConfig, Generator};
use weir_io::PcapWriter;
use weir_wire::LinkType;

pub fn gen(args: &GenArgs) -> Result<(), Failure> {
    let out = create_output(&args.output)?;
    let io_err = |e| Failure::from_io(&args.output.display().to_string(), e);
    let mut w = PcapWriter::new(out, LinkType::ETHERNET, 65535, args.nanos).map_err(io_err)?;
    let mut generator = Generator::new(GenConfig {
        seed: args.seed,
        count: args.count,
        malformed_per_mille: args.malformed_per_mille,
        ..GenConfig::default()
    });
    let mut progress = Progress::new(0);
    let mut n = 0u64;
    while let Some(f) = generator.next_frame() {
        w.write_frame(f.ts_ns, f.data.len() as u32, f.data)
            .map_err(io_err)?;
        n += 1;
        if n & 0xffff == 0 {
            progress.update(n);
        }
    }
    progress.finish();
    w.flush().map_err(io_err)
}
