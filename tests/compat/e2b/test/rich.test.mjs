// @e2b/code-interpreter on the `code-interpreter` image (numpy, PIL, matplotlib, pandas):
// figures displayed as png with their chart, PIL's show() and save(), a DataFrame's data,
// the stock template names reaching that image. Skipped, loudly, when the image is not
// built (`make images-code-interpreter`; setup.sh imports it when it is).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { tracker } from '../lib.mjs';
import { Sandbox } from '@e2b/code-interpreter';

const missing = process.env.SANDLOT_CI_IMAGE
	? false
	: 'the code-interpreter image is not built (make images-code-interpreter)';
const t = tracker();
let sbx;
before(async () => {
	if (!missing) sbx = t.add(await Sandbox.create('code-interpreter-v1', { timeoutMs: 600_000 }));
});
after(() => t.cleanup());

const png = (s) => Buffer.from(s, 'base64').subarray(1, 4).toString() === 'PNG';

test('code-interpreter-v1 is the code-interpreter image; base is the default image', { skip: missing }, async () => {
	const e = await sbx.runCode('import matplotlib, numpy, pandas, PIL; matplotlib.__version__');
	assert.equal(e.error, undefined);
	assert.match(e.text, /^3\./);
	const base = t.add(await Sandbox.create('base'));
	const b = await base.runCode('import importlib.util; importlib.util.find_spec("matplotlib") is None');
	assert.equal(b.text, 'True');
	// Without matplotlib the REPL's plain results are as they were.
	assert.equal((await base.runCode('1 + 1')).text, '2');
	await base.kill();
});

test('plt.show() displays the figure as png with its chart, before the cell result', { skip: missing }, async () => {
	const seen = [];
	const e = await sbx.runCode(
		'import matplotlib.pyplot as plt\nimport numpy as np\n' +
			'x = np.linspace(0, 20, 100)\nplt.plot(x, np.sin(x), label="sin")\n' +
			'plt.title("T")\nplt.xlabel("Time (s)")\nplt.show()\nprint("after")\n7',
		{ onResult: (r) => seen.push(r) },
	);
	assert.equal(e.error, undefined);
	assert.equal(e.results.length, 2);
	const [fig, main] = e.results;
	assert.equal(fig.isMainResult, false);
	assert.ok(png(fig.png));
	assert.match(fig.text, /^<Figure size 640x480 with 1 Axes>$/);
	assert.deepEqual(fig.extra, {});
	assert.equal(fig.chart.type, 'line');
	assert.equal(fig.chart.title, 'T');
	assert.equal(fig.chart.x_label, 'Time (s)');
	assert.equal(fig.chart.x_unit, 's');
	assert.equal(fig.chart.y_label, null);
	assert.equal(fig.chart.x_scale, 'linear');
	assert.equal(fig.chart.elements.length, 1);
	assert.equal(fig.chart.elements[0].label, 'sin');
	assert.equal(fig.chart.elements[0].points.length, 100);
	assert.deepEqual(fig.chart.elements[0].points[0], [0, 0]);
	assert.equal(main.text, '7');
	assert.equal(seen.length, 2);
	assert.deepEqual(e.logs.stdout, ['after\n']);
	// show() closed it: the next cell has no figure.
	assert.equal((await sbx.runCode('len(plt.get_fignums())')).text, '0');
});

test('a figure left open is displayed at the end of the cell, after its result', { skip: missing }, async () => {
	const e = await sbx.runCode(
		'fig, ax = plt.subplots()\nax.scatter([1, 2, 3], [4, 5, 6], label="d")\nax.set_ylabel("Price [USD]")\n"r"',
	);
	assert.equal(e.results.length, 2);
	assert.equal(e.results[0].text, 'r');
	assert.equal(e.results[0].isMainResult, true);
	const c = e.results[1].chart;
	assert.equal(c.type, 'scatter');
	assert.equal(c.title, null);
	assert.equal(c.y_unit, 'USD');
	assert.deepEqual(c.elements, [{ label: 'd', points: [[1, 4], [2, 5], [3, 6]] }]);
	assert.ok(c.x_ticks.every((v) => typeof v === 'number'));
	assert.ok(c.x_tick_labels.every((v) => typeof v === 'string'));
});

test('bar, pie and box charts; categories and dates; a superchart; unknown', { skip: missing }, async () => {
	const chart = async (code) => {
		const e = await sbx.runCode(code);
		assert.equal(e.error, undefined, e.error && e.error.traceback);
		return e.results[0].chart;
	};
	const bar = await chart('plt.bar(["a", "b"], [3, 4], label="g")\nplt.show()');
	assert.equal(bar.type, 'bar');
	assert.deepEqual(bar.elements, [
		{ label: 'a', value: 3, group: 'g' },
		{ label: 'b', value: 4, group: 'g' },
	]);
	const pie = await chart('plt.pie([75, 25], labels=["x", "y"], startangle=90)\nplt.show()');
	assert.equal(pie.type, 'pie');
	assert.deepEqual(pie.elements, [
		{ label: 'x', angle: 270, radius: 1 },
		{ label: 'y', angle: 90, radius: 1 },
	]);
	const box = await chart('plt.boxplot([[1, 2, 3, 4, 5, 40]], labels=["k"])\nplt.show()');
	assert.equal(box.type, 'box_and_whisker');
	assert.deepEqual(box.elements, [
		{ label: 'k', min: 1, first_quartile: 2.25, median: 3.5, third_quartile: 4.75, max: 5, outliers: [40] },
	]);
	const cat = await chart('plt.plot([1, 2], ["A", "B"])\nplt.show()');
	assert.equal(cat.y_scale, 'categorical');
	assert.deepEqual(cat.elements[0].points, [[1, 'A'], [2, 'B']]);
	const dates = await chart(
		'import datetime\nplt.plot([datetime.datetime(2024, 1, 1), datetime.datetime(2024, 1, 2)], [1, 2])\nplt.yscale("log")\nplt.show()',
	);
	assert.equal(dates.x_scale, 'datetime');
	assert.equal(dates.y_scale, 'log');
	assert.equal(new Date(dates.elements[0].points[0][0]).toISOString(), '2024-01-01T00:00:00.000Z');
	assert.ok(dates.x_ticks.every((v) => typeof v === 'string'));
	const sup = await chart(
		'fig, axs = plt.subplots(1, 2)\nfig.suptitle("S")\naxs[0].plot([1, 2])\naxs[1].bar(["q"], [1])\naxs[1].set_title("B")\nplt.show()',
	);
	assert.equal(sup.type, 'superchart');
	assert.equal(sup.title, 'S');
	assert.deepEqual(sup.elements.map((c) => [c.type, c.title]), [['line', null], ['bar', 'B']]);
	const unk = await chart('fig, ax = plt.subplots()\nax.add_artist(plt.Circle((0, 0), 1))\nax.set_title("C")\nplt.show()');
	assert.deepEqual(unk, { type: 'unknown', title: 'C', elements: [] });
});

test('a figure as the cell value; a backend the user picks is left alone', { skip: missing }, async () => {
	const e = await sbx.runCode('fig = plt.figure()\nfig.add_subplot().plot([3, 1])\nplt.close(fig)\nfig');
	assert.equal(e.results.length, 1);
	assert.equal(e.results[0].isMainResult, true);
	assert.ok(png(e.results[0].png));
	assert.equal(e.results[0].chart.type, 'line');
	const agg = await sbx.runCode('plt.switch_backend("Agg")\nplt.plot([1])\nplt.show()\nlen(plt.get_fignums())');
	assert.equal(agg.results.length, 1);
	assert.equal(agg.text, '1');
});

test("PIL: show() and a save() from the cell display the image; the value's png", { skip: missing }, async () => {
	const e = await sbx.runCode(
		'from PIL import Image\nim = Image.new("RGB", (4, 4), "red")\nim.show()\nim.save("/tmp/a.png")\nprint("done")',
	);
	assert.equal(e.results.length, 2);
	assert.ok(e.results.every((r) => png(r.png) && !r.isMainResult));
	assert.deepEqual(e.logs.stdout, ['done\n']);
	const v = await sbx.runCode('Image.open("/tmp/a.png")');
	assert.ok(png(v.results[0].png));
	assert.equal(v.results[0].isMainResult, true);
});

test("a DataFrame's data (to_dict orient='list'), html and text", { skip: missing }, async () => {
	const e = await sbx.runCode(
		'import pandas as pd\nimport numpy as np\npd.DataFrame({"a": [1, 2], "b": ["x", None], "c": [0.5, np.nan]})',
	);
	const r = e.results[0];
	assert.deepEqual(r.data, { a: [1, 2], b: ['x', null], c: [0.5, null] });
	assert.match(r.html, /<table/);
	assert.match(r.text, /a +b +c/);
	// A Series is text and html as pandas gives them, no data.
	const s = await sbx.runCode('pd.Series([1, 2])');
	assert.equal(s.results[0].data, undefined);
});
