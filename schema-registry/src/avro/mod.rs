//! Avro: schemas parsed by `apache-avro` (validation, names, references), compiled into a flat
//! tree of [`Node`]s with every named reference resolved, which the codecs
//! ([`json_codec`], the Python shell's) and the compatibility checker ([`compat`]) walk.

pub mod binary;
pub mod compat;
pub mod json_codec;

use std::collections::HashMap;

use apache_avro::schema::{Name, Schema};

use crate::error::{Error, Result};

/// One compiled Avro type. Children are indexes into [`Compiled::nodes`], so recursive types
/// are plain cycles of indexes.
#[derive(Debug, Clone, PartialEq)]
pub enum Node {
    /// `null`.
    Null,
    /// `boolean`.
    Boolean,
    /// `int`.
    Int,
    /// `long`.
    Long,
    /// `float`.
    Float,
    /// `double`.
    Double,
    /// `bytes`.
    Bytes,
    /// `string`.
    String,
    /// `array` of the item node.
    Array(usize),
    /// `map` of the value node.
    Map(usize),
    /// `union` of the branch nodes, in order.
    Union(Vec<usize>),
    /// `record`.
    Record(Record),
    /// `enum`.
    Enum(Enum),
    /// `fixed`.
    Fixed(Fixed),
    /// `decimal` on `bytes` (`fixed` is `None`) or on a `fixed`.
    Decimal {
        /// Digits.
        precision: usize,
        /// Digits after the point.
        scale: usize,
        /// The `fixed` it is stored in, if not `bytes`.
        fixed: Option<Fixed>,
    },
    /// `big-decimal` (bytes).
    BigDecimal,
    /// `uuid` (string).
    Uuid,
    /// `date` (int, days since the epoch).
    Date,
    /// `time-millis` (int).
    TimeMillis,
    /// `time-micros` (long).
    TimeMicros,
    /// `timestamp-millis` (long).
    TimestampMillis,
    /// `timestamp-micros` (long).
    TimestampMicros,
    /// `timestamp-nanos` (long).
    TimestampNanos,
    /// `local-timestamp-millis` (long).
    LocalTimestampMillis,
    /// `local-timestamp-micros` (long).
    LocalTimestampMicros,
    /// `local-timestamp-nanos` (long).
    LocalTimestampNanos,
    /// `duration` (fixed of 12 bytes).
    Duration,
}

/// A record type.
#[derive(Debug, Clone, PartialEq)]
pub struct Record {
    /// Full name.
    pub name: String,
    /// Full names of its aliases.
    pub aliases: Vec<String>,
    /// Fields in order.
    pub fields: Vec<Field>,
}

/// A record field.
#[derive(Debug, Clone, PartialEq)]
pub struct Field {
    /// Name.
    pub name: String,
    /// Aliases.
    pub aliases: Vec<String>,
    /// Its type.
    pub node: usize,
    /// Its default, as JSON (the Avro JSON encoding).
    pub default: Option<serde_json::Value>,
}

/// An enum type.
#[derive(Debug, Clone, PartialEq)]
pub struct Enum {
    /// Full name.
    pub name: String,
    /// Full names of its aliases.
    pub aliases: Vec<String>,
    /// Symbols in order.
    pub symbols: Vec<String>,
    /// The reader's default symbol for unknown writer symbols.
    pub default: Option<String>,
}

/// A fixed type.
#[derive(Debug, Clone, PartialEq)]
pub struct Fixed {
    /// Full name.
    pub name: String,
    /// Full names of its aliases.
    pub aliases: Vec<String>,
    /// Size in bytes.
    pub size: usize,
}

/// A schema compiled for encoding, decoding and compatibility checks.
#[derive(Debug, Clone)]
pub struct Compiled {
    /// Every node; children point into this.
    pub nodes: Vec<Node>,
    /// The schema's own node.
    pub root: usize,
    /// The parsed schema (for canonical forms).
    pub schema: Schema,
}

impl Compiled {
    /// The node at `i`.
    #[inline]
    pub fn node(&self, i: usize) -> &Node {
        &self.nodes[i]
    }

    /// The canonical JSON of the schema as the registry compares it: `apache-avro`'s
    /// serialization of the parsed schema (full names, no whitespace, docs and defaults kept).
    pub fn canonical(&self) -> String {
        serde_json::to_string(&self.schema).unwrap_or_else(|_| self.schema.canonical_form())
    }
}

fn parse_err(e: impl std::fmt::Display) -> Error {
    Error::InvalidSchema(e.to_string())
}

/// Parses `text` with the named schemas of `references` (their JSON texts, in dependency order)
/// available by name, and compiles it.
pub fn parse(text: &str, references: &[String]) -> Result<Compiled> {
    let (schema, deps) = if references.is_empty() {
        (Schema::parse_str(text).map_err(parse_err)?, Vec::new())
    } else {
        Schema::parse_str_with_list(text, references).map_err(parse_err)?
    };
    compile(schema, &deps)
}

/// Compiles a parsed schema; `deps` are the referenced schemas that define names it uses.
pub fn compile(schema: Schema, deps: &[Schema]) -> Result<Compiled> {
    let mut defs: HashMap<String, &Schema> = HashMap::new();
    for d in deps {
        collect_names(d, &mut defs);
    }
    collect_names(&schema, &mut defs);
    let mut b = Builder {
        nodes: Vec::new(),
        named: HashMap::new(),
        defs,
    };
    let root = b.add(&schema)?;
    let nodes = b.nodes;
    Ok(Compiled {
        nodes,
        root,
        schema,
    })
}

fn full(name: &Name) -> String {
    name.fullname(None)
}

fn alias_names(aliases: &Option<Vec<apache_avro::schema::Alias>>, ns: &Name) -> Vec<String> {
    aliases
        .iter()
        .flatten()
        .map(|a| a.fullname(ns.namespace.clone()))
        .collect()
}

fn collect_names<'a>(s: &'a Schema, out: &mut HashMap<String, &'a Schema>) {
    match s {
        Schema::Record(r) => {
            out.insert(full(&r.name), s);
            for f in &r.fields {
                collect_names(&f.schema, out);
            }
        }
        Schema::Enum(e) => {
            out.insert(full(&e.name), s);
        }
        Schema::Fixed(f) => {
            out.insert(full(&f.name), s);
        }
        Schema::Decimal(d) => collect_names(&d.inner, out),
        Schema::Array(a) => collect_names(&a.items, out),
        Schema::Map(m) => collect_names(&m.types, out),
        Schema::Union(u) => {
            for v in u.variants() {
                collect_names(v, out);
            }
        }
        _ => {}
    }
}

struct Builder<'a> {
    nodes: Vec<Node>,
    named: HashMap<String, usize>,
    defs: HashMap<String, &'a Schema>,
}

impl Builder<'_> {
    fn push(&mut self, n: Node) -> usize {
        self.nodes.push(n);
        self.nodes.len() - 1
    }

    fn fixed(f: &apache_avro::schema::FixedSchema) -> Fixed {
        Fixed {
            name: full(&f.name),
            aliases: alias_names(&f.aliases, &f.name),
            size: f.size,
        }
    }

    fn add(&mut self, s: &Schema) -> Result<usize> {
        let node = match s {
            Schema::Null => Node::Null,
            Schema::Boolean => Node::Boolean,
            Schema::Int => Node::Int,
            Schema::Long => Node::Long,
            Schema::Float => Node::Float,
            Schema::Double => Node::Double,
            Schema::Bytes => Node::Bytes,
            Schema::String => Node::String,
            Schema::Uuid => Node::Uuid,
            Schema::BigDecimal => Node::BigDecimal,
            Schema::Date => Node::Date,
            Schema::TimeMillis => Node::TimeMillis,
            Schema::TimeMicros => Node::TimeMicros,
            Schema::TimestampMillis => Node::TimestampMillis,
            Schema::TimestampMicros => Node::TimestampMicros,
            Schema::TimestampNanos => Node::TimestampNanos,
            Schema::LocalTimestampMillis => Node::LocalTimestampMillis,
            Schema::LocalTimestampMicros => Node::LocalTimestampMicros,
            Schema::LocalTimestampNanos => Node::LocalTimestampNanos,
            Schema::Duration => Node::Duration,
            Schema::Array(a) => {
                let i = self.push(Node::Null);
                let item = self.add(&a.items)?;
                self.nodes[i] = Node::Array(item);
                return Ok(i);
            }
            Schema::Map(m) => {
                let i = self.push(Node::Null);
                let v = self.add(&m.types)?;
                self.nodes[i] = Node::Map(v);
                return Ok(i);
            }
            Schema::Union(u) => {
                let i = self.push(Node::Null);
                let mut branches = Vec::with_capacity(u.variants().len());
                for v in u.variants() {
                    branches.push(self.add(v)?);
                }
                self.nodes[i] = Node::Union(branches);
                return Ok(i);
            }
            Schema::Decimal(d) => {
                let fixed = match &*d.inner {
                    Schema::Fixed(f) => Some(Self::fixed(f)),
                    _ => None,
                };
                Node::Decimal {
                    precision: d.precision,
                    scale: d.scale,
                    fixed,
                }
            }
            Schema::Record(r) => {
                let name = full(&r.name);
                if let Some(&i) = self.named.get(&name) {
                    return Ok(i);
                }
                let i = self.push(Node::Null);
                self.named.insert(name.clone(), i);
                let mut fields = Vec::with_capacity(r.fields.len());
                for f in &r.fields {
                    fields.push(Field {
                        name: f.name.clone(),
                        aliases: f.aliases.clone().unwrap_or_default(),
                        node: self.add(&f.schema)?,
                        default: f.default.clone(),
                    });
                }
                self.nodes[i] = Node::Record(Record {
                    name,
                    aliases: alias_names(&r.aliases, &r.name),
                    fields,
                });
                return Ok(i);
            }
            Schema::Enum(e) => {
                let name = full(&e.name);
                if let Some(&i) = self.named.get(&name) {
                    return Ok(i);
                }
                let i = self.push(Node::Enum(Enum {
                    name: name.clone(),
                    aliases: alias_names(&e.aliases, &e.name),
                    symbols: e.symbols.clone(),
                    default: e.default.clone(),
                }));
                self.named.insert(name, i);
                return Ok(i);
            }
            Schema::Fixed(f) => {
                let name = full(&f.name);
                if let Some(&i) = self.named.get(&name) {
                    return Ok(i);
                }
                let i = self.push(Node::Fixed(Self::fixed(f)));
                self.named.insert(name, i);
                return Ok(i);
            }
            Schema::Ref { name } => {
                let fullname = full(name);
                if let Some(&i) = self.named.get(&fullname) {
                    return Ok(i);
                }
                let def = *self
                    .defs
                    .get(&fullname)
                    .ok_or_else(|| Error::InvalidSchema(format!("unknown type {fullname}")))?;
                return self.add(def);
            }
        };
        Ok(self.push(node))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recursive_record_compiles_to_a_cycle() {
        let c = parse(
            r#"{"type":"record","name":"L","fields":[{"name":"v","type":"int"},{"name":"next","type":["null","L"]}]}"#,
            &[],
        )
        .unwrap();
        let Node::Record(r) = c.node(c.root) else {
            panic!()
        };
        let Node::Union(b) = c.node(r.fields[1].node) else {
            panic!()
        };
        assert_eq!(b[1], c.root);
    }

    #[test]
    fn references_resolve_by_name() {
        let dep = r#"{"type":"record","name":"Addr","namespace":"x","fields":[{"name":"c","type":"string"}]}"#;
        let c = parse(
            r#"{"type":"record","name":"P","fields":[{"name":"a","type":"x.Addr"}]}"#,
            &[dep.to_string()],
        )
        .unwrap();
        let Node::Record(r) = c.node(c.root) else {
            panic!()
        };
        assert!(matches!(c.node(r.fields[0].node), Node::Record(a) if a.name == "x.Addr"));
        assert!(parse(
            r#"{"type":"record","name":"P","fields":[{"name":"a","type":"x.Nope"}]}"#,
            &[]
        )
        .is_err());
    }
}
