import { readFileSync } from 'node:fs';
const p = JSON.parse(readFileSync(process.argv[2], 'utf8'));
const self = new Map(); const byId = new Map(p.nodes.map(n => [n.id, n]));
const dt = p.timeDeltas; const counts = new Map();
p.samples.forEach((id, i) => counts.set(id, (counts.get(id) ?? 0) + (dt[i] ?? 0)));
for (const n of p.nodes) { const k = `${n.callFrame.functionName || '(anon)'} ${n.callFrame.url.split('/').slice(-2).join('/')}:${n.callFrame.lineNumber}`; self.set(k, (self.get(k) ?? 0) + (counts.get(n.id) ?? 0)); }
const total = [...self.values()].reduce((a, b) => a + b, 0);
console.log('total ms', total / 1000);
for (const [k, v] of [...self].sort((a, b) => b[1] - a[1]).slice(0, 40)) console.log((v / 1000).toFixed(1).padStart(8), k);
