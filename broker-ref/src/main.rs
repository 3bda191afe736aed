//! `odradek-broker`: the reference broker binary.

#[global_allocator]
static ALLOC: odradek::alloc::UntrustedInputAllocator = odradek::alloc::UntrustedInputAllocator;

fn main() {
    eprintln!(
        "odradek-broker: the broker arrives with its own issue; this binary is a placeholder"
    );
    std::process::exit(2);
}
