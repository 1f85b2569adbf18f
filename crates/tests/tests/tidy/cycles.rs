//! No module import cycle inside a crate. Each crate root (`src/lib.rs`, `src/main.rs`) and
//! the file modules it declares (`mod x;`, test-only ones left out) are the nodes; a file
//! depends on every module it names in code: `crate::…`, `super::…`, `self::…`, its own
//! child modules, and the names its `use` items bring in. Naming an ancestor is not a
//! dependency (a module may use what the modules above it declare), so a parent that
//! dispatches to its children is fine; a loop through siblings is a cycle.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::path::{Path, PathBuf};

use crate::lex::{lex, tokens};
use crate::{crate_dirs, read, report, shown};

type Tokens = Vec<(usize, String)>;
type ModPath = Vec<String>;

fn is_ident(t: &str) -> bool {
    t.chars()
        .next()
        .is_some_and(|c| c.is_alphabetic() || c == '_')
}

/// The file's code tokens, without test-only modules (`#[cfg(test)] mod x;` or `{ … }`).
fn code_tokens(file: &Path) -> Tokens {
    let all = tokens(&lex(&read(file)).code);
    let mut out = Vec::with_capacity(all.len());
    let mut i = 0;
    while i < all.len() {
        let test_attr = ["#", "[", "cfg", "(", "test", ")", "]"]
            .iter()
            .enumerate()
            .all(|(k, t)| all.get(i + k).is_some_and(|(_, x)| x == t));
        if test_attr {
            let mut j = i + 7;
            if all.get(j).is_some_and(|(_, t)| t == "pub") {
                j += 1;
            }
            if all.get(j).is_some_and(|(_, t)| t == "mod")
                && all.get(j + 2).is_some_and(|(_, t)| t == ";")
            {
                i = j + 3;
                continue;
            }
            if all.get(j).is_some_and(|(_, t)| t == "mod")
                && all.get(j + 2).is_some_and(|(_, t)| t == "{")
            {
                let mut depth = 0;
                let mut k = j + 2;
                while k < all.len() {
                    match all[k].1.as_str() {
                        "{" => depth += 1,
                        "}" => depth -= 1,
                        _ => {}
                    }
                    k += 1;
                    if depth == 0 {
                        break;
                    }
                }
                i = k;
                continue;
            }
        }
        out.push(all[i].clone());
        i += 1;
    }
    out
}

/// The file modules of one crate root: path → (file, its code tokens).
fn modules(root_file: &Path) -> BTreeMap<ModPath, (PathBuf, Tokens)> {
    let mut out = BTreeMap::new();
    let mut todo = vec![(ModPath::new(), root_file.to_path_buf(), true)];
    while let Some((path, file, owns_dir)) = todo.pop() {
        let toks = code_tokens(&file);
        for w in toks.windows(3) {
            if w[0].1 == "mod" && is_ident(&w[1].1) && w[2].1 == ";" {
                let name = &w[1].1;
                let dir = if owns_dir {
                    file.parent().map(Path::to_path_buf).unwrap_or_default()
                } else {
                    file.with_extension("")
                };
                let (flat, nested) = (
                    dir.join(format!("{name}.rs")),
                    dir.join(name).join("mod.rs"),
                );
                let mut child = path.clone();
                child.push(name.clone());
                if flat.is_file() {
                    todo.push((child, flat, false));
                } else if nested.is_file() {
                    todo.push((child, nested, true));
                }
            }
        }
        out.insert(path, (file, toks));
    }
    out
}

/// A `use` tree's leaves: (path, the name it brings in, if any).
fn use_leaves(toks: &[String]) -> Vec<(ModPath, Option<String>)> {
    fn tree(
        toks: &[String],
        i: &mut usize,
        prefix: &ModPath,
        out: &mut Vec<(ModPath, Option<String>)>,
    ) {
        let mut path = prefix.clone();
        while *i < toks.len() {
            let t = toks[*i].as_str();
            match t {
                "::" => *i += 1,
                "{" => {
                    *i += 1;
                    while *i < toks.len() && toks[*i] != "}" {
                        tree(toks, i, &path, out);
                        if toks.get(*i).is_some_and(|t| t == ",") {
                            *i += 1;
                        }
                    }
                    *i += 1;
                    return;
                }
                "*" => {
                    *i += 1;
                    out.push((path, None));
                    return;
                }
                "as" => {
                    let alias = toks.get(*i + 1).cloned();
                    *i += 2;
                    out.push((path, alias.filter(|a| a != "_")));
                    return;
                }
                "," | "}" | ";" => {
                    let name = match path.last().map(String::as_str) {
                        Some("self") => {
                            path.pop();
                            path.last().cloned()
                        }
                        other => other.map(str::to_string),
                    };
                    out.push((path, name));
                    return;
                }
                _ => {
                    path.push(t.to_string());
                    *i += 1;
                }
            }
        }
        let name = path.last().cloned();
        out.push((path, name));
    }
    let mut out = Vec::new();
    let mut i = 0;
    tree(toks, &mut i, &ModPath::new(), &mut out);
    out
}

/// What `segs`, written in module `here`, names from the crate root, if it is in the crate.
fn absolute(
    segs: &[String],
    here: &ModPath,
    children: &BTreeSet<String>,
    aliases: &BTreeMap<String, ModPath>,
) -> Option<ModPath> {
    let first = segs.first()?.as_str();
    let mut base = match first {
        "crate" => ModPath::new(),
        "super" | "self" => {
            let mut base = here.clone();
            let mut rest = segs;
            while let Some(s) = rest.first() {
                match s.as_str() {
                    "super" => _ = base.pop(),
                    "self" => {}
                    _ => break,
                }
                rest = &rest[1..];
            }
            base.extend(rest.iter().cloned());
            return Some(base);
        }
        _ if children.contains(first) => {
            let mut p = here.clone();
            p.push(first.to_string());
            p
        }
        _ => aliases.get(first)?.clone(),
    };
    base.extend(segs[1..].iter().cloned());
    Some(base)
}

/// The module of `modules` that holds what `path` names: its longest module prefix.
fn module_of(path: &ModPath, modules: &BTreeMap<ModPath, (PathBuf, Tokens)>) -> ModPath {
    (0..=path.len())
        .rev()
        .map(|n| path[..n].to_vec())
        .find(|p| modules.contains_key(p))
        .unwrap_or_default()
}

/// Each module a file depends on, with the first line that names it.
fn dependencies(
    here: &ModPath,
    toks: &Tokens,
    modules: &BTreeMap<ModPath, (PathBuf, Tokens)>,
) -> BTreeMap<ModPath, usize> {
    let children: BTreeSet<String> = modules
        .keys()
        .filter(|k| k.len() == here.len() + 1 && k.starts_with(here))
        .filter_map(|k| k.last().cloned())
        .collect();
    let mut named: Vec<(usize, ModPath)> = Vec::new();
    let mut aliases = BTreeMap::new();
    let mut in_use = vec![false; toks.len()];
    // `use` items: their leaves are references, and their names are aliases.
    for start in 0..toks.len() {
        let before = start.checked_sub(1).map(|k| toks[k].1.as_str());
        if toks[start].1 != "use"
            || !matches!(before, None | Some(";" | "{" | "}" | "]" | "pub" | ")"))
        {
            continue;
        }
        let end = (start..toks.len())
            .find(|&k| toks[k].1 == ";")
            .unwrap_or(toks.len());
        in_use[start..end].iter_mut().for_each(|b| *b = true);
        let words: Vec<String> = toks[start + 1..end]
            .iter()
            .map(|(_, t)| t.clone())
            .collect();
        for (path, name) in use_leaves(&words) {
            if let Some(abs) = absolute(&path, here, &children, &BTreeMap::new()) {
                named.push((toks[start].0, abs.clone()));
                if let Some(name) = name {
                    aliases.insert(name, abs);
                }
            }
        }
    }
    // Paths in code: `a::b…` not inside a `use`, a `pub(in …)`, or a macro's `$crate`.
    let mut i = 0;
    while i < toks.len() {
        let t = toks[i].1.as_str();
        let before = |n: usize| i.checked_sub(n).map(|k| toks[k].1.as_str());
        let visibility =
            before(1) == Some("in") && before(2) == Some("(") && before(3) == Some("pub");
        let starts = !in_use[i]
            && is_ident(t)
            && !visibility
            && !matches!(before(1), Some("::" | "$"))
            && toks.get(i + 1).is_some_and(|(_, x)| x == "::");
        if !starts {
            i += 1;
            continue;
        }
        let mut segs = vec![t.to_string()];
        let mut k = i + 1;
        while toks.get(k).is_some_and(|(_, x)| x == "::")
            && toks.get(k + 1).is_some_and(|(_, x)| is_ident(x))
        {
            segs.push(toks[k + 1].1.clone());
            k += 2;
        }
        if let Some(abs) = absolute(&segs, here, &children, &aliases) {
            named.push((toks[i].0, abs));
        }
        i = k;
    }
    let mut out = BTreeMap::new();
    for (line, path) in named {
        let target = module_of(&path, modules);
        if &target != here && !here.starts_with(&target) {
            out.entry(target).or_insert(line);
        }
    }
    out
}

/// The strongly connected components of more than one module (Tarjan).
fn cycles(edges: &BTreeMap<ModPath, BTreeMap<ModPath, usize>>) -> Vec<Vec<ModPath>> {
    struct State<'a> {
        edges: &'a BTreeMap<ModPath, BTreeMap<ModPath, usize>>,
        index: BTreeMap<ModPath, usize>,
        low: BTreeMap<ModPath, usize>,
        stack: Vec<ModPath>,
        out: Vec<Vec<ModPath>>,
    }
    fn visit(s: &mut State, v: &ModPath) {
        let n = s.index.len();
        s.index.insert(v.clone(), n);
        s.low.insert(v.clone(), n);
        s.stack.push(v.clone());
        for w in s.edges.get(v).into_iter().flat_map(|e| e.keys()) {
            if !s.index.contains_key(w) {
                visit(s, w);
                let lw = s.low[w];
                let lv = s.low.get_mut(v).expect("visited");
                *lv = (*lv).min(lw);
            } else if s.stack.contains(w) {
                let iw = s.index[w];
                let lv = s.low.get_mut(v).expect("visited");
                *lv = (*lv).min(iw);
            }
        }
        if s.low[v] == s.index[v] {
            let at = s.stack.iter().position(|x| x == v).expect("on the stack");
            let comp = s.stack.split_off(at);
            if comp.len() > 1 {
                s.out.push(comp);
            }
        }
    }
    let mut s = State {
        edges,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        out: Vec::new(),
    };
    for v in edges.keys() {
        if !s.index.contains_key(v) {
            visit(&mut s, v);
        }
    }
    s.out
}

/// One shortest loop from the component's first module back to it, as `file:line → …`.
fn one_loop(
    comp: &[ModPath],
    edges: &BTreeMap<ModPath, BTreeMap<ModPath, usize>>,
    modules: &BTreeMap<ModPath, (PathBuf, Tokens)>,
) -> String {
    let mut members: Vec<&ModPath> = comp.iter().collect();
    members.sort();
    let start = members[0];
    let mut came_from: BTreeMap<&ModPath, &ModPath> = BTreeMap::new();
    let mut queue = VecDeque::from([start]);
    'search: while let Some(v) = queue.pop_front() {
        for w in edges[v].keys().filter(|w| comp.contains(w)) {
            if w == start {
                came_from.insert(start, v);
                break 'search;
            }
            if !came_from.contains_key(w) {
                came_from.insert(w, v);
                queue.push_back(w);
            }
        }
    }
    let mut path = vec![start];
    let mut v = came_from[start];
    while v != start {
        path.push(v);
        v = came_from[v];
    }
    path.push(start);
    path.reverse();
    path.windows(2)
        .map(|w| format!("{}:{}", shown(&modules[w[0]].0), edges[w[0]][w[1]]))
        .chain([shown(&modules[start].0)])
        .collect::<Vec<_>>()
        .join(" → ")
}

#[test]
fn no_module_import_cycle_in_any_crate() {
    let mut problems = Vec::new();
    for dir in crate_dirs() {
        for root in ["src/lib.rs", "src/main.rs"].map(|r| dir.join(r)) {
            if !root.is_file() {
                continue;
            }
            let modules = modules(&root);
            let edges: BTreeMap<ModPath, BTreeMap<ModPath, usize>> = modules
                .iter()
                .map(|(m, (_, toks))| (m.clone(), dependencies(m, toks, &modules)))
                .collect();
            for comp in cycles(&edges) {
                let mut files: Vec<String> = comp.iter().map(|m| shown(&modules[m].0)).collect();
                files.sort();
                let text = format!(
                    "{}: {} modules in a cycle: {}\n  for example {}",
                    shown(&root),
                    comp.len(),
                    files.join(", "),
                    one_loop(&comp, &edges, &modules)
                );
                problems.push(text);
            }
        }
    }
    report(
        "module import cycles: break each loop, e.g. move what both sides need into a module \
         below them, or let the module that wires things up (a router) import the parts, and \
         the parts import only the shared state",
        problems,
    );
}

#[test]
fn use_trees_give_their_leaves_and_names() {
    let toks: Vec<String> = "crate :: { a :: { b , c as d } , e :: self , f :: * }"
        .split(' ')
        .map(String::from)
        .collect();
    let leaves: Vec<(String, Option<String>)> = use_leaves(&toks)
        .into_iter()
        .map(|(p, n)| (p.join("::"), n))
        .collect();
    let want = [
        ("crate::a::b", Some("b")),
        ("crate::a::c", Some("d")),
        ("crate::e", Some("e")),
        ("crate::f", None),
    ]
    .map(|(p, n)| (p.to_string(), n.map(String::from)));
    assert_eq!(leaves, want);
}
