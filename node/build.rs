//! Link settings for a Node.js addon (undefined N-API symbols resolve at load time).
fn main() {
    napi_build::setup();
}
