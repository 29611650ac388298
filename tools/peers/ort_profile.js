// Per-node times of one ONNX model in ONNX Runtime (its own profiler): the median of each node's
// kernel time over RUNS runs, as JSON lines {name, op, input_shapes, output_shapes, us}.
// usage: node ort_profile.js MODEL.onnx INPUT.npy THREADS RUNS
'use strict';
const fs = require('fs');
const os = require('os');
const path = require('path');
const ort = require('onnxruntime-node');
const { readNpy } = require('./npy');

async function main() {
  const [model, input, threads, runs] = process.argv.slice(2);
  const prefix = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'ortprof-')), 'p');
  const session = await ort.InferenceSession.create(model, {
    intraOpNumThreads: Number(threads), interOpNumThreads: 1, executionMode: 'sequential',
    graphOptimizationLevel: 'all', executionProviders: ['cpu'], enableProfiling: true, profileFilePrefix: prefix,
  });
  const a = readNpy(input);
  const feeds = { [session.inputNames[0]]: new ort.Tensor('float32', a.data, a.shape) };
  for (let i = 0; i < 3; i++) await session.run(feeds);
  for (let i = 0; i < Number(runs); i++) await session.run(feeds);
  session.endProfiling();
  await session.release();
  const dir = path.dirname(prefix);
  const file = path.join(dir, fs.readdirSync(dir).find(f => f.startsWith('p') && f.endsWith('.json')));
  const events = JSON.parse(fs.readFileSync(file, 'utf8'));
  const by = new Map();
  for (const e of events) {
    if (e.cat !== 'Node' || !e.name.endsWith('_kernel_time')) continue;
    const name = e.name.slice(0, -'_kernel_time'.length);
    if (!by.has(name)) by.set(name, { name, op: e.args.op_name, input_shapes: e.args.input_type_shape,
      output_shapes: e.args.output_type_shape, durs: [] });
    by.get(name).durs.push(e.dur);
  }
  for (const v of by.values()) {
    const d = v.durs.slice(-Number(runs)).sort((x, y) => x - y);
    v.us = d[Math.floor(d.length / 2)];
    delete v.durs;
    console.log(JSON.stringify(v));
  }
}
main().catch(e => { console.error('ort_profile: ' + e.message); process.exit(2); });
