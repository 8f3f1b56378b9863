/** Timers, run by the host's loop within the run's time limit. */

// --- timers: run by the host's loop within the run's time limit ---
let timers = [],
  timerSeq = 0
function addTimer(fn, ms, args, repeat) {
  if (typeof fn !== 'function') throw new TypeError('The "callback" argument must be of type function')
  let delay = Number(ms)
  if (!(delay >= 1)) delay = 1
  if (delay > 2147483647) delay = 1
  const t = { id: ++timerSeq, at: Date.now() + delay, fn: fn, args: args, repeat: repeat ? delay : 0 }
  timers.push(t)
  return t.id
}
function clearTimer(id) {
  if (id && typeof id === 'object' && typeof id[Symbol.toPrimitive] === 'function')
    id = id[Symbol.toPrimitive]()
  for (let i = 0; i < timers.length; i++)
    if (timers[i].id === id) {
      timers.splice(i, 1)
      return
    }
}
function setTimeout(fn, ms, ...args) {
  return addTimer(fn, ms, args, false)
}
function setInterval(fn, ms, ...args) {
  return addTimer(fn, ms, args, true)
}
function setImmediate(fn, ...args) {
  return addTimer(fn, 0, args, false)
}
function earliest() {
  let best = null
  for (let i = 0; i < timers.length; i++)
    if (!best || timers[i].at < best.at || (timers[i].at === best.at && timers[i].id < best.id))
      best = timers[i]
  return best
}
/** The host's hook: -1 when no timer is pending, else the time the next one is due (Date.now() terms); with fire, runs it first if due. */
function pumpTimers(fire) {
  let t = earliest()
  if (t && fire && t.at <= Date.now()) {
    if (t.repeat) t.at = Date.now() + t.repeat
    else clearTimer(t.id)
    t.fn.apply(undefined, t.args)
    t = earliest()
  }
  return t ? t.at : -1
}

export { clearTimer, pumpTimers, setImmediate, setInterval, setTimeout }
