// What stops a long-running command: here, the end of the process that started it (npm start).
import { once } from 'node:events'
import t from 'tap'
import { createStop, describeStop, stopExitCode, watchProcess } from '../src/lifecycle.js'

// the watch's timer is unref'd (it must not keep a process alive): this one keeps the test's alive
const keep = setInterval(() => {}, 1000)
t.teardown(() => clearInterval(keep))

t.test('the parent process gone (npm start stopped by SIGTERM, which npm does not pass on) is a stop with exit 0', async (t) => {
  const stop = createStop()
  let parent = 4242
  const unwatch = watchProcess(stop, { watchParent: true, parentPid: () => parent, parentCheckMs: 10 })
  t.teardown(unwatch)
  await new Promise((resolve) => setTimeout(resolve, 50))
  t.equal(stop.reason, undefined, 'while the parent lives, nothing happens')
  parent = 1
  await once(stop.signal, 'abort')
  t.same(stop.reason, { parent: 4242 })
  t.equal(stopExitCode(stop.reason!), 0)
  t.equal(describeStop(stop.reason!), 'the process that started it (pid 4242) is gone')
})

t.test('a process whose parent is pid 1 (systemd, a container\'s init) never counts as orphaned', async (t) => {
  const stop = createStop()
  let asked = 0
  const unwatch = watchProcess(stop, { watchParent: true, parentPid: () => { asked++; return 1 }, parentCheckMs: 10 })
  t.teardown(unwatch)
  await new Promise((resolve) => setTimeout(resolve, 50))
  t.equal(asked, 1, 'read once at start, not watched')
  t.equal(stop.reason, undefined)
})

t.test('not under npm (nohup, a start script that backgrounds it and exits): the parent\'s end stops nothing', async (t) => {
  const stop = createStop()
  let parent = 4242
  const unwatch = watchProcess(stop, { watchParent: false, parentPid: () => parent, parentCheckMs: 10 })
  t.teardown(unwatch)
  parent = 1
  await new Promise((resolve) => setTimeout(resolve, 50))
  t.equal(stop.reason, undefined)
})
