// The profile page's flame graph (unwound stacks) or icicle (flat profiles), drawn in the
// browser by d3-flame-graph (third_party/js, inlined into the page): click a box to zoom to
// it, search to highlight, merge every call of one function into one tree, and the
// `[truncated]` root of the chains the unwinder could not finish drawn apart.
#include <map>
#include <ostream>

#include <nlohmann/json.hpp>

#include "html_page.h"
#include "mcuprof/report/report.h"

namespace mcuprof::core {
namespace html {
extern const char flame_graph_library[];   // d3 and d3-flame-graph, generated at build time
}
namespace {

using html::escape;

// The call tree d3-flame-graph draws: {name, value, children}, a node's value being the
// samples whose shown chain passes through it (its own and its callees').
struct Node {
    std::string name;
    double samples = 0;
    std::vector<Node> children;
    std::map<std::string, size_t> index;

    Node& child(const std::string& child_name)
    {
        auto [it, added] = index.emplace(child_name, children.size());
        if (added)
            children.push_back({child_name, 0, {}, {}});
        return children[it->second];
    }

    nlohmann::json to_json() const
    {
        nlohmann::json node = {{"name", name}, {"value", samples}};
        if (!children.empty()) {
            nlohmann::json list = nlohmann::json::array();
            for (const Node& c : children)
                list.push_back(c.to_json());
            node["children"] = std::move(list);
        }
        return node;
    }
};

// JSON inside <script type="application/json">: a '<' written as \u003c, so that no function
// name can end the script element ("</script>") or open a comment in it (HTML, 4.12.1.3).
std::string script_safe(const std::string& json)
{
    std::string out;
    out.reserve(json.size());
    for (char c : json) {
        if (c == '<')
            out += "\\u003c";
        else
            out += c;
    }
    return out;
}

// Our code around the library: the chart, the search box, the merge list, the reset button.
// The merged tree of a function F: every outermost box of F (one not inside another F), its
// samples and its callees added up under one root F, so that a function called from many
// places (an interrupt handler on top of every stack) is one box as wide as its inclusive
// samples.
constexpr const char* flame_graph_script = R"js(
(function () {
  const container = document.querySelector('div.flame');
  const tree = JSON.parse(document.getElementById('flame-data').textContent);
  const truncatedName = container.dataset.truncated;
  const search = document.getElementById('flame-search');
  const merge = document.getElementById('flame-merge');
  const details = document.getElementById('flame-details');
  const percent = (value, total) => (100 * value / total).toFixed(2) + ' %';

  function mergedCalls(root, name) {
    const merged = { name: name, value: 0, children: [] };
    function add(into, node) {
      into.value += node.value;
      for (const child of node.children || []) {
        let same = into.children.find(c => c.name === child.name);
        if (!same) {
          same = { name: child.name, value: 0, children: [] };
          into.children.push(same);
        }
        add(same, child);
      }
    }
    (function walk(node, depth) {
      if (depth > 0 && node.name === name) {
        add(merged, node);
        return;
      }
      for (const child of node.children || []) walk(child, depth + 1);
    })(root, 0);
    return merged;
  }

  // The merge list: every function, widest (most inclusive samples) first.
  const inclusive = new Map();
  (function walk(node, depth, above) {
    if (depth > 0 && !above.has(node.name))
      inclusive.set(node.name, (inclusive.get(node.name) || 0) + node.value);
    const next = new Set(above).add(node.name);
    for (const child of node.children || []) walk(child, depth + 1, next);
  })(tree, 0, new Set());
  for (const [name, value] of [...inclusive].sort((a, b) => b[1] - a[1])) {
    const option = document.createElement('option');
    option.value = name;
    option.textContent = name + ' (' + percent(value, tree.value) + ')';
    merge.appendChild(option);
  }

  let total = tree.value;
  const chart = flamegraph.default()
    .width(Math.max(container.clientWidth, 400))
    .cellHeight(18)
    .inverted(container.id === 'icicle')
    .sort(true)
    .minFrameSize(1)
    .resetHeightOnZoom(true)   // a zoomed or merged tree is as tall as its own depth
    .transitionDuration(300)
    .setDetailsElement(details)
    .setSearchMatch((d, term) => term !== '' && d.data.name.toLowerCase().includes(term.toLowerCase()))
    .setColorMapper((d, libraryColour) => d.highlight ? libraryColour
      : d.data.name === truncatedName ? '#b0b0b0' : d.depth === 0 && merge.value === '' ? '#d0d0d0' : libraryColour)
    .setLabelHandler(d => d.data.name + ' \u2014 ' + d.value + ' samples, ' + percent(d.value, total));
  d3.select(container).datum(structuredClone(tree)).call(chart);

  search.addEventListener('input', () => search.value ? chart.search(search.value) : chart.clear());
  merge.addEventListener('change', () => {
    const shown = merge.value === '' ? structuredClone(tree) : mergedCalls(tree, merge.value);
    total = shown.value;
    chart.update(shown);
    chart.resetZoom();
    if (search.value) chart.search(search.value);
  });
  document.getElementById('flame-reset').addEventListener('click', () => chart.resetZoom());
})();
)js";

} // namespace

void write_flame_graph(const Profile& p, std::ostream& out)
{
    Node root{"all", 0, {}, {}};
    bool truncated = false;
    for (const StackRow& stack : p.stacks) {
        root.samples += stack.samples;
        truncated = truncated || stack.truncated;
        Node* node = &root;
        for (const StackFrame& frame : shown_frames(stack)) {
            node = &node->child(frame.function);
            node->samples += stack.samples;
        }
    }
    if (root.samples <= 0)
        return;
    // Unwound stacks grow upwards from the root (a flame graph); flat profiles hang their
    // functions (and inline chains) under it (an icicle).
    const bool flame = p.unwound;
    out << "<h2>" << (flame ? "Flame graph" : "Functions (icicle)") << "</h2>\n<p>"
        << (flame ? "Each box is a function on the call stack, as wide as the samples that had it there; "
                    "callers below, callees above."
                  : "No unwound stacks: each function (with the functions it is inlined into above it) "
                    "is as wide as its samples.")
        << " Click a box to zoom to it; search highlights the functions whose name holds the text; "
           "merging gathers every call of one function into one tree.";
    if (truncated)
        out << " <span class=\"truncated-key\">Grey <b>" << escape(truncated_frame_name)
            << "</b></span> stands for the callers the unwinder could not reach: the chains above it are "
               "incomplete.";
    out << "</p>\n<div class=\"flame-tools\"><input type=\"search\" id=\"flame-search\" placeholder=\"search\" "
           "aria-label=\"search functions\"> <label>merge by function <select id=\"flame-merge\">"
           "<option value=\"\">no: every call path</option></select></label> "
           "<button id=\"flame-reset\" type=\"button\">reset zoom</button> <span id=\"flame-details\"></span></div>\n"
        << "<div class=\"flame\" id=\"" << (flame ? "flamegraph" : "icicle") << "\" data-truncated=\""
        << escape(truncated_frame_name) << "\"></div>\n"
        << "<script type=\"application/json\" id=\"flame-data\">" << script_safe(root.to_json().dump())
        << "</script>\n"
        // d3 (ISC) and d3-flame-graph (Apache-2.0): third_party/js, licences installed with the docs.
        << "<script>\n" << html::flame_graph_library << "</script>\n<script>" << flame_graph_script << "</script>\n";
}

} // namespace mcuprof::core
