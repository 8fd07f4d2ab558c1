#include "html_page.h"

#include <algorithm>

namespace mcuprof::core::html {

std::string escape(const std::string& text)
{
    std::string out;
    out.reserve(text.size());
    for (char c : text) {
        switch (c) {
        case '&': out += "&amp;"; break;
        case '<': out += "&lt;"; break;
        case '>': out += "&gt;"; break;
        case '"': out += "&quot;"; break;
        case '\'': out += "&#39;"; break;
        default: out += c;
        }
    }
    return out;
}

void begin_page(std::ostream& out, const std::string& title)
{
    out << "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
           // Nothing may be fetched: inline style and script only.
           "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
           "style-src 'unsafe-inline'; script-src 'unsafe-inline'\">\n"
        << "<title>" << escape(title) << "</title>\n"
        << R"(<style>
body { font: 14px/1.4 system-ui, sans-serif; margin: 1.5em; color: #222; }
h1 { font-size: 1.4em; } h2 { font-size: 1.15em; margin-top: 1.6em; }
table { border-collapse: collapse; }
th, td { padding: 2px 8px; text-align: right; border-bottom: 1px solid #eee; white-space: nowrap; }
th { cursor: pointer; background: #f4f4f4; position: sticky; top: 0; }
td.name, th.name, td.loc { text-align: left; }
td.name { font-family: ui-monospace, monospace; }
td.name, td.loc { white-space: normal; overflow-wrap: anywhere; }  /* long C++ names wrap; numbers stay in view */
dl.meta { display: grid; grid-template-columns: max-content auto; gap: 2px 16px; }
dl.meta dt { font-weight: 600; } dl.meta dd { margin: 0; }
.warning { color: #a40; } .hint { background: #fff6e0; padding: 4px 8px; margin: 4px 0; }
.bar { position: relative; width: 160px; height: 12px; background: #f2f2f2; }
.bar .ci { position: absolute; top: 0; height: 12px; background: #f3c08a; }
.bar .share { position: absolute; top: 3px; height: 6px; background: #c0392b; }
tr.flagged td { background: #fde8e4; }
.b .bar .share, .b-key { background: none; color: #2c6fb0; } .b .bar .share { background: #2c6fb0; }
.a-key { color: #c0392b; }
div.flame-tools { margin: 6px 0; } div.flame-tools #flame-details { color: #555; margin-left: 1em; }
.truncated-key b { background: #b0b0b0; padding: 0 4px; font-family: ui-monospace, monospace; }
pre.source { font: 12px ui-monospace, monospace; margin: 0; }
pre.source span.hot { background: #fde0c8; }
pre.source span.share { color: #a40; display: inline-block; width: 6em; text-align: right; }
pre.source span.num { color: #888; display: inline-block; width: 4em; text-align: right; }
</style>
</head>
<body>
)";
}

void end_page(std::ostream& out)
{
    out << R"(<script>
for (const table of document.querySelectorAll('table.sortable')) {
  table.querySelectorAll('th').forEach((th, column) => th.addEventListener('click', () => {
    const body = table.tBodies[0];
    const descending = th.dataset.order !== 'desc';
    th.dataset.order = descending ? 'desc' : 'asc';
    const key = row => row.cells[column].dataset.v ?? row.cells[column].textContent;
    const rows = [...body.rows].sort((a, b) => {
      const x = key(a), y = key(b), nx = Number(x), ny = Number(y);
      const order = (x !== '' && y !== '' && !isNaN(nx) && !isNaN(ny)) ? nx - ny : x.localeCompare(y);
      return descending ? -order : order;
    });
    for (const row of rows) body.appendChild(row);
  }));
}
</script>
</body>
</html>
)";
}

std::string share_bar(double percent, double low, double high, double scale)
{
    if (!(scale > 0))
        scale = 100;
    auto part = [&](double value) { return std::clamp(100.0 * value / scale, 0.0, 100.0); };
    return printf_string("<div class=\"bar\" title=\"95 %% interval %.2f..%.2f %%\">"
                         "<div class=\"ci\" style=\"left:%.2f%%;width:%.2f%%\"></div>"
                         "<div class=\"share\" style=\"width:%.2f%%\"></div></div>",
                         low, high, part(low), std::max(part(high) - part(low), 0.3), part(percent));
}

} // namespace mcuprof::core::html
