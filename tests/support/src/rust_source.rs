//! The tree's Rust as the guards read it (the glossary, the sysfs layout,
//! the module graph): test code told apart by its attribute, and the string
//! literals of product code, macro arguments included.

/// Whether an item is test code (`#[cfg(test)]`).
pub fn is_test(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|a| {
        a.path().is_ident("cfg") && a.parse_args::<syn::Ident>().is_ok_and(|i| i == "test")
    })
}

/// Whether doc comments count as literals: they do where clap makes them
/// help text (the glossary), not where they only explain the code.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum DocComments {
    Included,
    Left,
}

/// Every string literal of a file's product code (test modules, functions
/// and impls left out by their attribute), macro arguments included when
/// they parse as expressions (a log line's format string and arguments).
pub fn product_literals(file: &syn::File, docs: DocComments) -> Vec<String> {
    struct Lits(Vec<String>, DocComments);
    impl<'ast> syn::visit::Visit<'ast> for Lits {
        fn visit_item(&mut self, item: &'ast syn::Item) {
            let test = match item {
                syn::Item::Mod(m) => is_test(&m.attrs),
                syn::Item::Fn(f) => is_test(&f.attrs),
                syn::Item::Impl(i) => is_test(&i.attrs),
                _ => false,
            };
            if !test {
                syn::visit::visit_item(self, item);
            }
        }
        fn visit_attribute(&mut self, a: &'ast syn::Attribute) {
            if self.1 == DocComments::Included {
                syn::visit::visit_attribute(self, a);
            }
        }
        fn visit_lit_str(&mut self, s: &'ast syn::LitStr) {
            self.0.push(s.value());
        }
        fn visit_macro(&mut self, m: &'ast syn::Macro) {
            let args = m.parse_body_with(
                syn::punctuated::Punctuated::<syn::Expr, syn::Token![,]>::parse_terminated,
            );
            for e in args.into_iter().flatten() {
                syn::visit::visit_expr(self, &e);
            }
        }
    }
    let mut lits = Lits(Vec::new(), docs);
    syn::visit::Visit::visit_file(&mut lits, file);
    lits.0
}
