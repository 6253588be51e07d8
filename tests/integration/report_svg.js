// SPDX-License-Identifier: MIT
// Drives pmetrics report's flame graph in headless Chromium through
// playwright-core: renders, search, zoom, span filter. Prints one
// "ok NAME" or "not ok NAME: why" per check, for test_report.sh.
// Usage: node report_svg.js PLAYWRIGHT_DIR SVG_FILE samples|time
// (the report's --weight: the texts expected of test_report.sh's capture,
// 100 on-CPU samples of 10.10101 ms and 5 off-CPU ones of 2 ms)
const { chromium } = require(require('path').join(process.argv[2], 'node_modules', 'playwright-core'));
const svg = process.argv[3];
const E = {
	samples: {
		root: 'all (105 samples, 100.00%, off-CPU 5 samples)',
		matched: 'Matched: 57.14% (60 of 105 samples)',
		all: 'Matched: 100.00% (105 of 105 samples)',
		hover: 'idle_loop (10 samples, 9.52%)',
		root2: 'all (65 samples, 100.00%, off-CPU 5 samples)',
		sub2: /^65 samples inside ANALYZING_PROTOCOL/,
		matched2: 'Matched: 92.31% (60 of 65 samples)',
	},
	time: {
		root: 'all (1.02 s, 100.00%, off-CPU 10.00 ms)',
		matched: 'Matched: 59.41% (606.06 ms of 1.02 s)',
		all: 'Matched: 100.00% (1.02 s of 1.02 s)',
		hover: 'idle_loop (101.01 ms, 9.90%)',
		root2: 'all (616.06 ms, 100.00%, off-CPU 10.00 ms)',
		sub2: /^616\.06 ms of on- and off-CPU time inside ANALYZING_PROTOCOL/,
		matched2: 'Matched: 98.38% (606.06 ms of 616.06 ms)',
	},
}[process.argv[4]];

function check(name, ok, why) {
	console.log(ok ? `ok ${name}` : `not ok ${name}: ${why}`);
}

// The drawn frames: name (from the <title>, without the count) and rect.
async function frames(page) {
	return page.$$eval('#frames g.f', (gs) => gs.map((g) => ({
		title: g.querySelector('title').textContent,
		name: g.querySelector('title').textContent.replace(/ \((\d+ samples?|[\d.]+ (s|ms|\u00b5s|ns)), [\d.]+%(, off-CPU [^)]*)?\)$/, ''),
		x: +g.querySelector('rect').getAttribute('x'),
		w: +g.querySelector('rect').getAttribute('width'),
		cls: g.getAttribute('class'),
	})));
}

(async () => {
	const userDir = require('fs').mkdtempSync('/tmp/pmetrics-chromium-');
	const browser = await chromium.launchPersistentContext(userDir, {
		executablePath: '/usr/bin/chromium',
		headless: true,
		args: ['--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking',
			'--disable-component-update', '--disable-sync'],
	});
	try {
		const page = await browser.newPage();
		const errors = [];
		page.on('pageerror', (e) => errors.push(String(e)));
		await page.goto('file://' + svg);
		await page.waitForSelector('#frames g.f');

		let f = await frames(page);
		const root = f.find((x) => x.name === 'all');
		check('renders', root && root.title === E.root && f.length === 11 &&
			Math.abs(root.w - 1180) < 0.01 && errors.length === 0,
			`root ${root && root.title}, ${f.length} frames, errors ${errors.join('; ')}`);

		await page.fill('#search', 'parse_protocol');
		f = await frames(page);
		const matched = f.filter((x) => /\bmatch\b/.test(x.cls)).map((x) => x.name);
		const share = await page.textContent('#matched');
		check('search highlights', matched.length === 1 &&
			matched[0] === 'parse_protocol (robot_server/protocols/parse.py:7)' &&
			share === E.matched,
			`matched ${JSON.stringify(matched)}, "${share}"`);
		await page.fill('#search', 'serve|idle');
		const share2 = await page.textContent('#matched');
		check('search share counts nested matches once', share2 === E.all, `"${share2}"`);
		await page.fill('#search', '');

		await page.click('#frames g.f:has(title:text-matches("^_get_cached"))');
		f = await frames(page);
		const z = f.find((x) => x.name.startsWith('_get_cached_protocol_analysis'));
		const leaf = f.find((x) => x.name === 'json_load');
		const hidden = f.find((x) => x.name === 'idle_loop');
		const details = await page.textContent('#details');
		check('click zooms', z && Math.abs(z.x - 10) < 0.01 && Math.abs(z.w - 1180) < 0.01 &&
			leaf && Math.abs(leaf.w - 1180) < 0.01 && !hidden,
			`zoomed ${JSON.stringify(z)}, leaf ${JSON.stringify(leaf)}, idle ${JSON.stringify(hidden)}, "${details}"`);
		await page.click('#reset');

		await page.hover('#frames g.f:has(title:text-matches("^idle_loop"))');
		const hover = await page.textContent('#details');
		check('hover shows name, count, share', hover === E.hover, `"${hover}"`);

		const options = await page.$$eval('#span option', (os) => os.map((o) => o.textContent));
		await page.selectOption('#span', { label: 'ANALYZING_PROTOCOL' });
		f = await frames(page);
		const root2 = f.find((x) => x.name === 'all');
		const sub = await page.textContent('#sub');
		const gone = f.find((x) => x.name === 'json_load');
		check('span filter changes the totals', JSON.stringify(options) ===
			'["all samples","ANALYZING_PROTOCOL","GETTING_CACHED_ANALYSIS"]' &&
			root2 && root2.title === E.root2 && E.sub2.test(sub) && !gone,
			`options ${JSON.stringify(options)}, root ${root2 && root2.title}, "${sub}", json_load ${JSON.stringify(gone)}`);
		await page.fill('#search', 'parse_protocol');
		const share3 = await page.textContent('#matched');
		check('search share follows the filter', share3 === E.matched2, `"${share3}"`);
	} finally {
		await browser.close();
		require('fs').rmSync(userDir, { recursive: true, force: true });
	}
})().catch((e) => {
	console.log(`not ok browser: ${e.message.split('\n')[0]}`);
	process.exit(1);
});
