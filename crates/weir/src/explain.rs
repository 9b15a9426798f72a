//! `weir explain`: replay up to packet N, then show its walk through the rules.

use crate::cli::ExplainArgs;
use crate::outputs;
use crate::setup::{build_engine, capture_failure, placement};
use crate::Failure;
use weir_engine::explain_packet;
use weir_io::open_capture;
use weir_rules::Names;
use weir_wire::decode;

pub fn explain(args: &ExplainArgs) -> Result<(), Failure> {
    if args.packet == 0 {
        return Err(Failure::Usage(
            "--packet counts from 1, as tcpdump and Wireshark do".into(),
        ));
    }
    let names = Names::system();
    let mut engine = build_engine(&args.rules, &args.engine, &names)?;
    let mut reader = open_capture(&args.read).map_err(|e| capture_failure(&args.read, e))?;
    let place = placement(&args.context, &args.engine);
    let mut index = 0u64;
    loop {
        let (frame, ifaces) = match reader.next_with_interfaces() {
            Ok(Some(x)) => x,
            Ok(None) => {
                return Err(Failure::Usage(format!(
                    "{} has {index} packets; there is no packet {}",
                    args.read.display(),
                    args.packet
                )))
            }
            Err(e) => return Err(capture_failure(&args.read, e)),
        };
        index += 1;
        engine.set_interfaces(&place.interface_names(ifaces));
        let mut p = decode(frame.link_type, frame.data, frame.orig_len);
        place.place(&mut p, &frame);
        if index < args.packet {
            // Earlier packets go through too, so later state (counters,
            // logamount) is what a full replay would have.
            engine.decide(&p);
            continue;
        }
        let iface = ifaces
            .get(frame.iface as usize)
            .and_then(|i| i.name.clone());
        let iface = iface.or_else(|| args.context.iface.clone());
        let text = explain_packet(
            &mut engine,
            &p,
            index,
            frame.offset,
            iface.as_deref(),
            &names,
        );
        return outputs::print(&text);
    }
}
