// The profile view's page: the function table (sortable; a click opens the function's source)
// and mcuprof's own HTML report (its d3 flame graph) below it, in a frame of its own.
import { Report } from './heat';

function esc(s: string): string {
  return s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
}

export function functionRows(report?: Report): string {
  if (!report) return '';
  return report.functions.map(r => {
    const inc = r.inclusive_percent === undefined ? '' : r.inclusive_percent.toFixed(2);
    return `<tr data-location="${esc(r.location ?? '')}"><td class="name">${esc(r.name)}</td>` +
      `<td data-v="${r.percent}">${r.percent.toFixed(2)}</td><td data-v="${r.stderr}">${r.stderr.toFixed(2)}</td>` +
      `<td data-v="${r.inclusive_percent ?? -1}">${inc}</td><td data-v="${r.samples}">${r.samples}</td></tr>`;
  }).join('\n');
}

export function profileHtml(title: string, report?: Report, html?: string): string {
  return `<!DOCTYPE html><html><head><meta charset="utf-8"><style>
body { font-family: var(--vscode-font-family); color: var(--vscode-foreground); }
table { border-collapse: collapse; } th, td { padding: 2px 8px; text-align: right; }
td.name, th.name { text-align: left; } th { cursor: pointer; } tr[data-location]:hover { background: var(--vscode-list-hoverBackground); cursor: pointer; }
iframe { width: 100%; height: 900px; border: 0; background: white; }
</style></head><body>
<h3 id="title">${esc(title)}${report ? `, ${report.samples} samples` : ''}</h3>
<table id="mcuprof-functions"><thead><tr><th class="name" data-k="0">function</th><th data-k="1">self %</th><th data-k="2">± SE</th><th data-k="3">inclusive %</th><th data-k="4">samples</th></tr></thead>
<tbody>${functionRows(report)}</tbody></table>
${html ? `<h3>Flame graph and report</h3><iframe id="mcuprof-report" srcdoc="${esc(html)}"></iframe>` : ''}
<script>
const vscode = acquireVsCodeApi();
const body = document.querySelector('#mcuprof-functions tbody');
let order = { k: 1, down: true };
for (const th of document.querySelectorAll('#mcuprof-functions th')) {
  th.addEventListener('click', () => {
    const k = Number(th.dataset.k);
    order = { k, down: order.k === k ? !order.down : k !== 0 };
    const rows = [...body.rows];
    const v = r => k === 0 ? r.cells[0].textContent : Number(r.cells[k].dataset.v);
    rows.sort((a, b) => { const x = v(a), y = v(b); const c = x < y ? -1 : x > y ? 1 : 0; return order.down ? -c : c; });
    for (const r of rows) body.appendChild(r);
  });
}
body.addEventListener('click', e => {
  const tr = e.target.closest('tr');
  if (tr && tr.dataset.location) vscode.postMessage({ open: tr.dataset.location });
});
</script></body></html>`;
}
