//! Protobuf: schemas are `.proto` text or a base64 `FileDescriptorProto` (what confluent-kafka
//! registers), compiled with `protox` against their references (imports by name) and Google's
//! well-known types. Compatibility follows the differences Confluent documents for Protobuf,
//! which apply the same in both directions:
//!
//! incompatible: PACKAGE_CHANGED, MESSAGE_REMOVED, FIELD_KIND_CHANGED (scalar / message / enum),
//! FIELD_SCALAR_KIND_CHANGED (outside the wire-compatible groups {int32, uint32, int64, uint64,
//! bool}, {sint32, sint64}, {fixed32, sfixed32}, {fixed64, sfixed64}, {string, bytes}),
//! FIELD_NAMED_TYPE_CHANGED, FIELD_LABEL_CHANGED (repeated ↔ singular), REQUIRED_FIELD_ADDED,
//! REQUIRED_FIELD_REMOVED, ONEOF_FIELD_REMOVED (a field leaves a oneof),
//! FIELD_MOVED_TO_EXISTING_ONEOF, MULTIPLE_FIELDS_MOVED_TO_ONEOF;
//! compatible: fields, messages, enums and enum values added or removed, fields renamed, one
//! field moved into a new oneof.
//!
//! Refused (an error, not a pass): a change of `syntax`, and changed extension declarations.

use std::collections::HashMap;
use std::path::Path;

use base64::Engine as _;
use prost::Message as _;
use prost_types::field_descriptor_proto::{Label, Type};
use prost_types::{DescriptorProto, FieldDescriptorProto, FileDescriptorProto};
use protox::file::{ChainFileResolver, File, FileResolver, GoogleFileResolver};

use super::Dependency;
use crate::error::{Error, Result};

/// The file name the schema being parsed gets (its references keep their own names).
const MAIN: &str = "odradek_registry_schema.proto";

struct Sources(HashMap<String, String>);

fn to_file(name: &str, text: &str) -> std::result::Result<File, protox::Error> {
    match decode_base64(text) {
        Some(mut fd) => {
            fd.name = Some(name.to_string());
            Ok(File::from_file_descriptor_proto(fd))
        }
        None => File::from_source(name, text),
    }
}

impl FileResolver for Sources {
    fn resolve_path(&self, path: &Path) -> Option<String> {
        path.to_str().map(String::from)
    }

    fn open_file(&self, name: &str) -> std::result::Result<File, protox::Error> {
        match self.0.get(name) {
            Some(text) => to_file(name, text),
            None => Err(protox::Error::file_not_found(name)),
        }
    }
}

/// A base64 `FileDescriptorProto`, if `text` is one.
pub fn decode_base64(text: &str) -> Option<FileDescriptorProto> {
    let t = text.trim();
    if t.is_empty() || t.contains(|c: char| c.is_whitespace() || c == ';' || c == '{') {
        return None;
    }
    let bytes = base64::engine::general_purpose::STANDARD.decode(t).ok()?;
    FileDescriptorProto::decode(bytes.as_slice()).ok()
}

/// Compiles `text` with its dependencies; returns the schema's own file descriptor.
pub fn parse(text: &str, deps: &[Dependency]) -> Result<FileDescriptorProto> {
    let mut sources = HashMap::new();
    for d in deps {
        sources.insert(d.name.clone(), d.schema.clone());
    }
    sources.insert(MAIN.to_string(), text.to_string());
    let mut chain = ChainFileResolver::new();
    chain.add(Sources(sources));
    chain.add(GoogleFileResolver::new());
    let mut compiler = protox::Compiler::with_file_resolver(chain);
    compiler.include_imports(true);
    compiler
        .open_file(MAIN)
        .map_err(|e| Error::InvalidSchema(format!("Invalid protobuf schema: {e}")))?;
    compiler
        .file_descriptor_set()
        .file
        .into_iter()
        .find(|f| f.name() == MAIN)
        .ok_or_else(|| Error::InvalidSchema("Invalid protobuf schema".into()))
}

/// The identity of a compiled file: its descriptor's bytes.
pub fn identity(fd: &FileDescriptorProto) -> String {
    base64::engine::general_purpose::STANDARD.encode(fd.encode_to_vec())
}

/// The schema as a base64 descriptor (`format=serialized`).
pub fn serialized(fd: &FileDescriptorProto, original_name: Option<&str>) -> String {
    let mut fd = fd.clone();
    fd.name = original_name.map(String::from).or(fd.name);
    base64::engine::general_purpose::STANDARD.encode(fd.encode_to_vec())
}

fn messages<'a>(
    prefix: &str,
    ms: &'a [DescriptorProto],
    out: &mut HashMap<String, &'a DescriptorProto>,
) {
    for m in ms {
        let name = format!("{prefix}.{}", m.name());
        messages(&name, &m.nested_type, out);
        out.insert(name, m);
    }
}

fn all_messages(fd: &FileDescriptorProto) -> HashMap<String, &DescriptorProto> {
    let prefix = if fd.package().is_empty() {
        String::new()
    } else {
        format!(".{}", fd.package())
    };
    let mut out = HashMap::new();
    messages(&prefix, &fd.message_type, &mut out);
    out
}

fn scalar_group(t: Type) -> Option<u8> {
    Some(match t {
        Type::Int32 | Type::Uint32 | Type::Int64 | Type::Uint64 | Type::Bool => 1,
        Type::Sint32 | Type::Sint64 => 2,
        Type::Fixed32 | Type::Sfixed32 => 3,
        Type::Fixed64 | Type::Sfixed64 => 4,
        Type::String | Type::Bytes => 5,
        Type::Float => 6,
        Type::Double => 7,
        Type::Message | Type::Group | Type::Enum => return None,
    })
}

fn oneof_of<'a>(m: &'a DescriptorProto, f: &FieldDescriptorProto) -> Option<&'a str> {
    if f.proto3_optional() {
        return None;
    }
    f.oneof_index
        .and_then(|i| usize::try_from(i).ok())
        .and_then(|i| m.oneof_decl.get(i))
        .map(|o| o.name())
}

/// Differences between `new` and `old` that Confluent counts as incompatible.
pub fn check(new: &FileDescriptorProto, old: &FileDescriptorProto) -> Result<Vec<String>> {
    if new.syntax() != old.syntax() {
        return Err(Error::RuleNotSupported(format!(
            "protobuf syntax changed from {:?} to {:?}",
            old.syntax(),
            new.syntax()
        )));
    }
    if new.extension != old.extension {
        return Err(Error::RuleNotSupported(
            "protobuf extensions changed".into(),
        ));
    }
    let mut out = Vec::new();
    let mut fail = |kind: &str, at: &str| out.push(format!("{{errorType:'{kind}', path:'{at}'}}"));
    if new.package() != old.package() {
        fail("PACKAGE_CHANGED", "#/");
    }
    let (nm, om) = (all_messages(new), all_messages(old));
    let mut names: Vec<&String> = om.keys().collect();
    names.sort();
    for name in names {
        let o = om[name];
        let Some(n) = nm.get(name) else {
            fail("MESSAGE_REMOVED", &format!("#/{name}"));
            continue;
        };
        if n.extension != o.extension {
            return Err(Error::RuleNotSupported(format!(
                "extensions of {name} changed"
            )));
        }
        let mut moved_to_new_oneof: HashMap<&str, usize> = HashMap::new();
        for of in &o.field {
            let at = format!("#/{name}/{}", of.number());
            let Some(nf) = n.field.iter().find(|f| f.number() == of.number()) else {
                if of.label() == Label::Required {
                    fail("REQUIRED_FIELD_REMOVED", &at);
                }
                continue;
            };
            match (scalar_group(of.r#type()), scalar_group(nf.r#type())) {
                (Some(a), Some(b)) if a != b => fail("FIELD_SCALAR_KIND_CHANGED", &at),
                (Some(_), Some(_)) => {}
                (None, None) if of.r#type() != nf.r#type() => fail("FIELD_KIND_CHANGED", &at),
                (None, None) if of.type_name() != nf.type_name() => {
                    fail("FIELD_NAMED_TYPE_CHANGED", &at)
                }
                (None, None) => {}
                _ => fail("FIELD_KIND_CHANGED", &at),
            }
            let repeated = |f: &FieldDescriptorProto| f.label() == Label::Repeated;
            if repeated(of) != repeated(nf) {
                fail("FIELD_LABEL_CHANGED", &at);
            }
            let required = |f: &FieldDescriptorProto| f.label() == Label::Required;
            if required(of) != required(nf) {
                fail(
                    if required(nf) {
                        "REQUIRED_FIELD_ADDED"
                    } else {
                        "REQUIRED_FIELD_REMOVED"
                    },
                    &at,
                );
            }
            match (oneof_of(o, of), oneof_of(n, nf)) {
                (Some(_), None) => fail("ONEOF_FIELD_REMOVED", &at),
                (None, Some(no)) => {
                    if o.oneof_decl.iter().any(|d| d.name() == no) {
                        fail("FIELD_MOVED_TO_EXISTING_ONEOF", &at);
                    } else {
                        *moved_to_new_oneof.entry(no).or_default() += 1;
                    }
                }
                _ => {}
            }
        }
        for (oneof, count) in moved_to_new_oneof {
            if count > 1 {
                fail(
                    "MULTIPLE_FIELDS_MOVED_TO_ONEOF",
                    &format!("#/{name}/{oneof}"),
                );
            }
        }
        for nf in &n.field {
            if nf.label() == Label::Required && !o.field.iter().any(|f| f.number() == nf.number()) {
                fail("REQUIRED_FIELD_ADDED", &format!("#/{name}/{}", nf.number()));
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &str) -> FileDescriptorProto {
        parse(s, &[]).unwrap()
    }

    #[test]
    fn rules() {
        let v1 = p("syntax = \"proto3\"; package a; message M { string s = 1; int32 i = 2; }");
        let added = p(
            "syntax = \"proto3\"; package a; message M { string s = 1; int32 i = 2; bytes b = 3; }",
        );
        let widened = p("syntax = \"proto3\"; package a; message M { string s = 1; int64 i = 2; }");
        let changed =
            p("syntax = \"proto3\"; package a; message M { string s = 1; double i = 2; }");
        let removed = p("syntax = \"proto3\"; package a; message N { string s = 1; }");
        assert!(check(&added, &v1).unwrap().is_empty());
        assert!(check(&v1, &added).unwrap().is_empty());
        assert!(check(&widened, &v1).unwrap().is_empty());
        assert_eq!(check(&changed, &v1).unwrap().len(), 1);
        assert!(check(&removed, &v1).unwrap()[0].contains("MESSAGE_REMOVED"));
        let v2 = p("syntax = \"proto2\"; package a; message M { optional string s = 1; optional int32 i = 2; }");
        assert!(check(&v2, &v1).is_err(), "syntax change is refused");
    }

    #[test]
    fn base64_descriptors_and_imports() {
        let v1 = p("syntax = \"proto3\"; import \"google/protobuf/timestamp.proto\"; message M { google.protobuf.Timestamp t = 1; }");
        let b64 = serialized(&v1, Some("m.proto"));
        let again = parse(&b64, &[]).unwrap();
        assert!(check(&again, &v1).unwrap().is_empty());
        let dep = Dependency {
            name: "dep.proto".into(),
            schema: "syntax = \"proto3\"; package d; message D { int32 x = 1; }".into(),
        };
        parse(
            "syntax = \"proto3\"; import \"dep.proto\"; message M { d.D d = 1; }",
            &[dep],
        )
        .unwrap();
        assert!(parse("syntax = \"proto3\"; message M { Nope n = 1; }", &[]).is_err());
        assert!(parse("not a proto", &[]).is_err());
    }
}
