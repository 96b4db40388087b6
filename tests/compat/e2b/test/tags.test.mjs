// tags.test.mjs — E2B's template tags with the real SDK: Template.build of 'name:tag' and
// with `tags`, Template.assignTags / removeTags / getTags, Sandbox.create('name:tag'), the
// default tag as the bare name; E2B's refusals (a bad tag, the default tag, a template that
// is not there) with its statuses. A tag is an image name (docs/images.md, "Tags").
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { Sandbox, Template } from 'e2b';
import { tracker, v1 } from '../lib.mjs';

const BASE = process.env.E2B_TEMPLATE_BASE || 'default';
const NAME = 'e2b-tags-app';
const t = tracker();
after(() => t.cleanup());

// A template whose file /v.txt says which build made it.
const recipe = (mark) => Template().fromImage(BASE).setUser('root').runCmd(`echo ${mark} > /v.txt`);
const mark = async (tpl) => {
	const sbx = t.add(await Sandbox.create(tpl));
	const out = (await sbx.commands.run('cat /v.txt')).stdout.trim();
	await sbx.kill();
	return out;
};
const tagsOf = async (name) => (await Template.getTags(name)).map((x) => x.tag).sort();

test("build 'name:tag': the image of that tag only; Sandbox.create('name:tag') starts from it", async () => {
	const info = await Template.build(recipe('one'), `${NAME}:v1`);
	assert.equal(info.templateId, NAME);
	assert.deepEqual(info.tags, ['v1']);
	assert.equal(await mark(`${NAME}:v1`), 'one');
	assert.deepEqual(await tagsOf(NAME), ['v1']);
	// No default tag was built: the bare name and 'name:default' are not there.
	await assert.rejects(Sandbox.create(NAME), /400/);
	await assert.rejects(Sandbox.create(`${NAME}:default`), /400/);
	assert.equal(await Template.aliasExists(NAME), true, 'a template with only a tag exists');
	const imgs = await v1('GET', `/v1/images/${NAME}/tags`);
	assert.deepEqual(imgs.images.map((i) => i.name), [`${NAME}:v1`]);
});

test('build with tags: each names the one build; the default tag is the bare name', async () => {
	const info = await Template.build(recipe('two'), NAME, { tags: ['v2', 'Latest'] });
	assert.deepEqual(info.tags, ['v2', 'latest']);
	assert.deepEqual(await tagsOf(NAME), ['latest', 'v1', 'v2']);
	assert.equal(await mark(`${NAME}:latest`), 'two');
	await Template.build(recipe('three'), NAME);
	assert.deepEqual(await tagsOf(NAME), ['default', 'latest', 'v1', 'v2']);
	assert.equal(await mark(NAME), 'three');
	assert.equal(await mark(`${NAME}:default`), 'three');
	assert.equal(await mark(`${NAME}:v2`), 'two', 'a new build moves only its own tags');
});

test('assignTags: more tags for the build a name:tag names, the default tag too', async () => {
	const tags = await Template.getTags(NAME);
	const v1Build = tags.find((x) => x.tag === 'v1');
	assert.match(v1Build.buildId, /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
	assert.ok(v1Build.createdAt instanceof Date && !isNaN(v1Build.createdAt));
	const info = await Template.assignTags(`${NAME}:v1`, ['production', 'default']);
	assert.deepEqual(info.tags.sort(), ['default', 'production']);
	assert.equal(info.buildId, v1Build.buildId, 'a tag names the build it was assigned from');
	assert.equal(await mark(`${NAME}:production`), 'one');
	assert.equal(await mark(NAME), 'one', 'the default tag moved to v1');
	const after = await Template.getTags(NAME);
	assert.equal(after.find((x) => x.tag === 'production').buildId, v1Build.buildId);
	assert.notEqual(after.find((x) => x.tag === 'v2').buildId, v1Build.buildId);
	// Assigned from the default tag (a target with no tag).
	await Template.assignTags(NAME, 'stable');
	assert.equal(await mark(`${NAME}:stable`), 'one');
});

test("E2B's refusals: bad tags, the stock templates, a template or tag that is not there", async () => {
	const refused = async (p, re) => assert.rejects(p, (e) => (assert.match(e.message, re), true));
	await refused(Template.assignTags(`${NAME}:v1`, ':invalid-tag'), /^400: Invalid tag: invalid tag ':invalid-tag'/);
	await refused(Template.assignTags(`${NAME}:v1`, `${NAME}:`), /^400: Invalid tag/);
	await refused(Template.assignTags(`${NAME}:v1`, '123e4567-e89b-12d3-a456-426614174000'), /tag cannot be a UUID/);
	await refused(Template.assignTags(`${NAME}:v1`, []), /^400: At least one tag is required/);
	await refused(Template.assignTags(`${NAME}:nope`, 'x'), new RegExp(`^404: Template '${NAME}:nope' not found`));
	await refused(Template.assignTags('e2b-tags-none', 'x'), /^404/);
	await refused(Template.assignTags('base', 'mine'), /^400: .*stock template/);
	await refused(Template.removeTags(NAME, 'default'), /^400: Cannot delete the 'default' tag/);
	await refused(Template.removeTags(`${NAME}:v1`, 'x'), /^400: Template name should not contain a tag/);
	await refused(Template.removeTags('e2b-tags-none', 'x'), /^404: Template 'e2b-tags-none' not found/);
	await refused(Template.getTags('e2b-tags-none'), /^404/);
	await refused(Template.build(recipe('x'), `${NAME}:bad/tag`), /^400/);
	await refused(Template.build(recipe('x'), 'base:v1'), /stock template/);
	assert.deepEqual(await tagsOf('base'), ['default'], "a stock template's one tag");
	assert.deepEqual(await tagsOf(NAME), ['default', 'latest', 'production', 'stable', 'v1', 'v2']);
});

test('removeTags: the tags go, the builds other tags hold stay; a missing tag is no error', async () => {
	await Template.removeTags(NAME, ['production', 'latest', 'never-there']);
	assert.deepEqual(await tagsOf(NAME), ['default', 'stable', 'v1', 'v2']);
	await assert.rejects(Sandbox.create(`${NAME}:production`), /400/);
	assert.equal(await mark(`${NAME}:v2`), 'two');
	await Template.removeTags(NAME, ['v1', 'v2', 'stable']);
	assert.deepEqual(await tagsOf(NAME), ['default']);
	assert.equal(await mark(NAME), 'one');
	await v1('DELETE', `/v1/images/${NAME}`);
	assert.equal(await Template.aliasExists(NAME), false);
});
