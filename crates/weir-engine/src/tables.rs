//! Lookup tables of the four kinds ipfw has, built once: from `--table`
//! files (address tables) and the ruleset's `table NAME …` commands, in
//! file order. Lookups never allocate.

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap};
use std::net::IpAddr;
use weir_rules::{
    self as ast, Diagnostic, Errors, Names, Span, TableCmd, TableKey, TableKind, TableOp,
    TableValue, TypedValue, ValueField, ValueTypes,
};
use weir_wire::{addr_to_u128, Packet};

/// Most entries a number, interface or flow table may hold (as address
/// tables' [`weir_table::Limits`]).
const MAX_ENTRIES: usize = 4_000_000;

/// A built table.
#[derive(Debug)]
pub enum Table {
    Addr(weir_table::Table),
    /// Numbers (ports, DSCP values), sorted by key.
    Number(Vec<(u32, u32)>),
    /// Interface names (exact), looked up when a capture names its
    /// interfaces, never per packet.
    Iface(Vec<(String, u32)>),
    Flow(FlowTable),
}

impl Table {
    pub fn kind(&self) -> TableKind {
        match self {
            Table::Addr(_) => TableKind::Addr,
            Table::Number(_) => TableKind::Number,
            Table::Iface(_) => TableKind::Iface,
            Table::Flow(f) => TableKind::Flow(f.fields),
        }
    }

    #[inline]
    pub fn lookup_ip(&self, addr: u128, version: u8) -> Option<u32> {
        match self {
            Table::Addr(t) => t.lookup_ip(addr, version),
            _ => None,
        }
    }

    #[inline]
    pub fn lookup_number(&self, key: u32) -> Option<u32> {
        match self {
            Table::Number(v) => v
                .binary_search_by_key(&key, |&(k, _)| k)
                .ok()
                .map(|i| v[i].1),
            _ => None,
        }
    }

    pub fn lookup_iface(&self, name: &str) -> Option<u32> {
        match self {
            Table::Iface(v) => v.iter().find(|(n, _)| n == name).map(|&(_, v)| v),
            _ => None,
        }
    }

    #[inline]
    pub fn lookup_flow(&self, p: &Packet) -> Option<u32> {
        match self {
            Table::Flow(f) => f.lookup(p),
            _ => None,
        }
    }
}

/// A flow table: the fields its kind names (weir_rules' `FLOW_FIELDS`
/// bits), the others zero, hashed.
#[derive(Debug)]
pub struct FlowTable {
    fields: u8,
    map: HashMap<FlowKey, u32, ahash::RandomState>,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
struct FlowKey {
    version: u8,
    src: u128,
    dst: u128,
    proto: u8,
    src_port: u16,
    dst_port: u16,
}

const SRC_IP: u8 = 1;
const PROTO: u8 = 2;
const SRC_PORT: u8 = 4;
const DST_IP: u8 = 8;
const DST_PORT: u8 = 16;

impl FlowTable {
    #[inline]
    fn lookup(&self, p: &Packet) -> Option<u32> {
        let pick = |bit: u8| self.fields & bit != 0;
        let ports = p.has_ports;
        let key = FlowKey {
            version: if pick(SRC_IP | DST_IP) {
                p.ip_version
            } else {
                0
            },
            src: if pick(SRC_IP) { p.src } else { 0 },
            dst: if pick(DST_IP) { p.dst } else { 0 },
            proto: if pick(PROTO) { p.proto } else { 0 },
            src_port: if pick(SRC_PORT) && ports {
                p.src_port
            } else {
                0
            },
            dst_port: if pick(DST_PORT) && ports {
                p.dst_port
            } else {
                0
            },
        };
        self.map.get(&key).copied()
    }
}

/// A table being filled.
enum Draft<'a> {
    Addr(Box<AddrDraft<'a>>),
    Number(BTreeMap<u32, u32>),
    Iface(BTreeMap<String, u32>),
    Flow(u8, HashMap<FlowKey, u32, ahash::RandomState>),
}

/// An address table being filled: a `--table` file's entries where they
/// lie, and the ruleset's own lines beside them. The file is copied only
/// when a line takes one of its entries out (`delete`, `add … update`):
/// a copy would double the largest thing a run holds.
struct AddrDraft<'a> {
    file: Cow<'a, weir_table::Builder>,
    lines: weir_table::Builder,
}

impl<'a> AddrDraft<'a> {
    fn new(file: Cow<'a, weir_table::Builder>) -> AddrDraft<'a> {
        let lines = weir_table::Builder::with_limits(file.limits());
        AddrDraft { file, lines }
    }

    fn add(&mut self, prefix: weir_table::Prefix, value: u32, update: bool) -> Result<(), String> {
        if update {
            self.remove(prefix);
        }
        self.lines
            .add_beside(&self.file, prefix, value)
            .map_err(|e| e.to_string())
    }

    fn remove(&mut self, prefix: weir_table::Prefix) {
        if self.lines.remove(prefix).is_none() && self.file.get(prefix).is_some() {
            self.file.to_mut().remove(prefix);
        }
    }

    fn clear(&mut self) {
        self.file = Cow::Owned(weir_table::Builder::with_limits(self.file.limits()));
        self.lines.clear();
    }

    fn len(&self) -> usize {
        self.file.len() + self.lines.len()
    }
}

impl Draft<'_> {
    fn new(kind: TableKind) -> Draft<'static> {
        match kind {
            TableKind::Addr => Draft::Addr(Box::new(AddrDraft::new(Cow::Owned(
                weir_table::Builder::new(),
            )))),
            TableKind::Number => Draft::Number(BTreeMap::new()),
            TableKind::Iface => Draft::Iface(BTreeMap::new()),
            TableKind::Flow(f) => Draft::Flow(f, HashMap::default()),
        }
    }

    fn kind(&self) -> TableKind {
        match self {
            Draft::Addr(_) => TableKind::Addr,
            Draft::Number(_) => TableKind::Number,
            Draft::Iface(_) => TableKind::Iface,
            Draft::Flow(f, _) => TableKind::Flow(*f),
        }
    }

    fn len(&self) -> usize {
        match self {
            Draft::Addr(a) => a.len(),
            Draft::Number(m) => m.len(),
            Draft::Iface(m) => m.len(),
            Draft::Flow(_, m) => m.len(),
        }
    }

    fn clear(&mut self) {
        match self {
            Draft::Addr(a) => a.clear(),
            Draft::Number(m) => m.clear(),
            Draft::Iface(m) => m.clear(),
            Draft::Flow(_, m) => m.clear(),
        }
    }
}

/// What a kind of table holds, for messages.
pub fn kind_words(kind: TableKind) -> &'static str {
    match kind {
        TableKind::Addr => "addresses",
        TableKind::Number => "numbers",
        TableKind::Iface => "interface names",
        TableKind::Flow(_) => "flows",
    }
}

/// A table's values beyond its entries: for a typed table (`valtype`),
/// each entry's value is an index into `records`, as the kernel keeps one
/// array of values for its entries (sys/netpfil/ipfw/ip_fw_table_value.c).
/// A legacy table's entries hold their number itself.
#[derive(Debug, Default)]
pub struct Values {
    pub types: ValueTypes,
    pub records: Vec<TypedValue>,
    /// Record of each distinct value, while the table is filled.
    index: HashMap<TypedValue, u32, ahash::RandomState>,
}

impl Values {
    fn new(types: ValueTypes) -> Values {
        Values {
            types,
            ..Values::default()
        }
    }

    /// What an entry stores for `value`.
    fn store(&mut self, value: &TableValue) -> Result<u32, String> {
        match value {
            TableValue::Legacy(v) if self.types.is_legacy() => Ok(*v),
            TableValue::Typed(t) if t.types == self.types => {
                if let Some(&at) = self.index.get(t) {
                    return Ok(at);
                }
                let at = u32::try_from(self.records.len()).map_err(|_| "too many values")?;
                self.records.push(**t);
                self.index.insert(**t, at);
                Ok(at)
            }
            _ => Err("the value does not have this table's value types".into()),
        }
    }

    /// Field `f` of what an entry stores.
    #[inline]
    pub fn field(&self, stored: u32, f: ValueField) -> u32 {
        if self.types.is_legacy() {
            stored
        } else {
            self.records.get(stored as usize).map_or(0, |r| r.number(f))
        }
    }

    /// The IPv6 next hop of what an entry stores (a legacy value has none).
    pub fn nh6(&self, stored: u32) -> u128 {
        self.records.get(stored as usize).map_or(0, |r| r.nh6)
    }

    pub fn memory_bytes(&self) -> usize {
        self.records.capacity() * std::mem::size_of::<TypedValue>()
    }
}

/// The tables, sorted by name, and their names and values.
pub struct Built {
    pub names: Vec<String>,
    pub tables: Vec<Table>,
    pub values: Vec<Values>,
}

/// Applies `files`, then `cmds` in order, and builds every table.
pub fn build(
    files: &[(String, weir_table::Builder)],
    cmds: &[TableCmd],
    names: &Names,
) -> Result<Built, Vec<Diagnostic>> {
    let mut drafts: BTreeMap<String, Draft> = files
        .iter()
        .map(|(n, b)| {
            (
                n.clone(),
                Draft::Addr(Box::new(AddrDraft::new(Cow::Borrowed(b)))),
            )
        })
        .collect();
    let mut values: BTreeMap<String, Values> = BTreeMap::new();
    let mut errors = Errors::default();
    for cmd in cmds {
        if let Err(msg) = apply(&mut drafts, &mut values, cmd, names) {
            errors.push(Diagnostic::new(
                cmd.span,
                format!("table {}: {msg}", cmd.table),
            ));
        }
    }
    let mut built = Built {
        names: Vec::new(),
        tables: Vec::new(),
        values: Vec::new(),
    };
    for (name, draft) in drafts {
        let table = match draft {
            Draft::Addr(a) => match a.file.build_with(&a.lines) {
                Ok(t) => Table::Addr(t),
                Err(e) => {
                    errors.push(Diagnostic::new(
                        Span::default(),
                        format!("table {name}: {e}"),
                    ));
                    continue;
                }
            },
            Draft::Number(m) => Table::Number(m.into_iter().collect()),
            Draft::Iface(m) => Table::Iface(m.into_iter().collect()),
            Draft::Flow(fields, map) => Table::Flow(FlowTable { fields, map }),
        };
        let mut v = values.remove(&name).unwrap_or_default();
        v.index = HashMap::default();
        v.records.shrink_to_fit();
        built.values.push(v);
        built.names.push(name);
        built.tables.push(table);
    }
    errors.finish(built)
}

fn apply(
    drafts: &mut BTreeMap<String, Draft>,
    values: &mut BTreeMap<String, Values>,
    cmd: &TableCmd,
    names: &Names,
) -> Result<(), String> {
    let name = cmd.table.as_str();
    match &cmd.op {
        TableOp::Create(kind, types) => match drafts.get(name) {
            // A table from --table (legacy values) gets its `create` line
            // from the script.
            Some(d) if d.kind() == *kind && matches!(d, Draft::Addr(_)) && types.is_legacy() => {
                Ok(())
            }
            Some(_) => Err("already exists".into()),
            None => {
                drafts.insert(name.to_owned(), Draft::new(*kind));
                values.insert(name.to_owned(), Values::new(*types));
                Ok(())
            }
        },
        TableOp::Add { key, value, update } => {
            let draft = drafts
                .entry(name.to_owned())
                .or_insert_with(|| Draft::new(key_kind(key)));
            if draft.len() >= MAX_ENTRIES {
                return Err(format!("more than {MAX_ENTRIES} entries"));
            }
            let stored = values.entry(name.to_owned()).or_default().store(value)?;
            add(draft, key, stored, *update, names)
        }
        TableOp::Delete(key) => {
            let draft = drafts.get_mut(name).ok_or("no such table")?;
            remove(draft, key, names)
        }
        TableOp::Flush if name == "all" => {
            drafts.values_mut().for_each(Draft::clear);
            Ok(())
        }
        TableOp::Flush => {
            if let Some(d) = drafts.get_mut(name) {
                d.clear();
            }
            Ok(())
        }
        TableOp::Destroy if name == "all" => {
            drafts.clear();
            values.clear();
            Ok(())
        }
        TableOp::Destroy => {
            drafts.remove(name);
            values.remove(name);
            Ok(())
        }
        TableOp::Swap(other) => {
            let a = drafts.remove(name).ok_or("no such table")?;
            let Some(b) = drafts.remove(other.as_str()) else {
                drafts.insert(name.to_owned(), a);
                return Err(format!("no such table '{other}' to swap with"));
            };
            if a.kind() != b.kind() {
                let msg = format!(
                    "cannot swap with '{other}', a table of other {}",
                    kind_words(b.kind())
                );
                drafts.insert(name.to_owned(), a);
                drafts.insert(other.clone(), b);
                return Err(msg);
            }
            drafts.insert(name.to_owned(), b);
            drafts.insert(other.clone(), a);
            let (va, vb) = (values.remove(name), values.remove(other.as_str()));
            values.extend(va.map(|v| (other.clone(), v)));
            values.extend(vb.map(|v| (name.to_owned(), v)));
            Ok(())
        }
    }
}

fn key_kind(key: &TableKey) -> TableKind {
    match key {
        TableKey::Prefix(..) => TableKind::Addr,
        TableKey::Number(_) => TableKind::Number,
        TableKey::Iface(_) => TableKind::Iface,
        TableKey::Flow(_) => TableKind::Flow(0),
    }
}

fn mismatch(draft: &Draft, key: &TableKey) -> String {
    format!("holds {}, and {key} is not one", kind_words(draft.kind()))
}

fn add(
    draft: &mut Draft,
    key: &TableKey,
    value: u32,
    update: bool,
    names: &Names,
) -> Result<(), String> {
    let duplicate = |old: u32| format!("{key} is already in the table with value {old}");
    match (draft, key) {
        (Draft::Addr(d), TableKey::Prefix(a, l)) => d.add(prefix(*a, *l)?, value, update),
        (Draft::Number(m), TableKey::Number(n)) => insert(m, *n, value, update).map_err(duplicate),
        (Draft::Iface(m), TableKey::Iface(n)) => {
            insert(m, n.clone(), value, update).map_err(duplicate)
        }
        (Draft::Flow(fields, m), TableKey::Flow(k)) => {
            let k = flow_key(*fields, k, names)?;
            if !update {
                if let Some(&old) = m.get(&k) {
                    return Err(duplicate(old));
                }
            }
            m.insert(k, value);
            Ok(())
        }
        (d, _) => Err(mismatch(d, key)),
    }
}

fn insert<K: Ord>(m: &mut BTreeMap<K, u32>, k: K, value: u32, update: bool) -> Result<(), u32> {
    match m.get(&k) {
        Some(&old) if !update => Err(old),
        _ => {
            m.insert(k, value);
            Ok(())
        }
    }
}

/// ipfw's quiet mode: deleting what is not there is no error.
fn remove(draft: &mut Draft, key: &TableKey, names: &Names) -> Result<(), String> {
    match (draft, key) {
        (Draft::Addr(d), TableKey::Prefix(a, l)) => d.remove(prefix(*a, *l)?),
        (Draft::Number(m), TableKey::Number(n)) => {
            m.remove(n);
        }
        (Draft::Iface(m), TableKey::Iface(n)) => {
            m.remove(n);
        }
        (Draft::Flow(fields, m), TableKey::Flow(k)) => {
            let k = flow_key(*fields, k, names)?;
            m.remove(&k);
        }
        (d, _) => return Err(mismatch(d, key)),
    }
    Ok(())
}

fn prefix(a: IpAddr, len: u8) -> Result<weir_table::Prefix, String> {
    match a {
        IpAddr::V4(a) => weir_table::Prefix::v4(u32::from(a), len),
        IpAddr::V6(a) => weir_table::Prefix::v6(u128::from(a), len),
    }
    .ok_or_else(|| "prefix length out of range".to_owned())
}

/// A flow key's fields, names resolved, as packets are looked up.
fn flow_key(fields: u8, k: &ast::FlowKey, names: &Names) -> Result<FlowKey, String> {
    let port = |p: &Option<ast::Port>| -> Result<u16, String> {
        match p {
            None => Ok(0),
            Some(ast::Port::Number(n)) => Ok(*n),
            Some(ast::Port::Name(n, _)) => names.service(n).ok_or(format!("unknown service '{n}'")),
        }
    };
    let proto = match &k.proto {
        None | Some(ast::Proto::Any) => 0,
        Some(ast::Proto::Number(n)) => *n,
        Some(ast::Proto::Name(n, _)) => {
            names.protocol(n).ok_or(format!("unknown protocol '{n}'"))?
        }
        Some(ast::Proto::Ip4 | ast::Proto::Ip6) => {
            return Err("a flow key's protocol is a number or name".into())
        }
    };
    let version = match k.src.or(k.dst) {
        Some(a) if a.is_ipv4() => 4,
        Some(_) => 6,
        None => 0,
    };
    Ok(FlowKey {
        version: if fields & (SRC_IP | DST_IP) != 0 {
            version
        } else {
            0
        },
        src: k.src.map_or(0, addr_to_u128),
        dst: k.dst.map_or(0, addr_to_u128),
        proto,
        src_port: port(&k.src_port)?,
        dst_port: port(&k.dst_port)?,
    })
}
