//! uniffi's bindings generator, pinned to the uniffi version of this crate (`kotlin/pom.xml`
//! runs it in `generate-sources`).

fn main() {
    uniffi::uniffi_bindgen_main()
}
