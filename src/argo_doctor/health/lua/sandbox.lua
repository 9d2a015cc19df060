-- argo-doctor: runs one Argo CD health script in a sandbox. Lua 5.1 plus goto (LuaJIT 2.1).
--
-- This chunk is run once in a fresh LuaRuntime and returns the runner function, which runs
-- one script per call, many calls per runtime. Each call builds a new global table holding
-- only what Argo CD gives a health script (base functions, table, a safe os with time/date,
-- and string/math/coroutine when useOpenLibs is on), never io, debug, file loading or the
-- host bridge, so nothing a script does reaches the next one. A count hook stops the script
-- after a budget of VM instructions or of CPU time; the host caps memory. Only strings,
-- numbers and booleans go back.

-- LuaJIT calls hooks only in interpreted code: with the compiler off, the instruction budget holds.
if jit then jit.off() end

local std = {
  pcall = pcall, xpcall = xpcall, error = error, type = type, select = select,
  tostring = tostring, rawget = rawget, next = next, pairs = pairs,
  loadstring = loadstring, setfenv = setfenv,
  sethook = debug.sethook, setmetatable = debug.setmetatable,
  cocreate = coroutine.create, coresume = coroutine.resume, costatus = coroutine.status,
  coyield = coroutine.yield, corunning = coroutine.running,
  concat = table.concat, byte = string.byte, ostime = os.time, osdate = os.date, clock = os.clock,
}
local base_names = {
  "assert", "error", "ipairs", "next", "pairs", "rawequal", "rawget", "rawset", "select",
  "setmetatable", "getmetatable", "tonumber", "tostring", "type", "unpack",
}
local libs = { table = table, string = string, math = math }
local OOM = "not enough memory"

local function copy(lib, skip)
  local out = {}
  for k, v in std.pairs(lib) do
    if not (skip and skip[k]) then out[k] = v end
  end
  return out
end

return function(source, obj, open_libs, max_ticks, tick, limit_message, cpu_seconds, time_message)
  local env = {}
  local ticks, stopped, out_of_memory = 0, nil, false
  local deadline = std.clock() + cpu_seconds

  -- Runs every `tick` instructions; C functions in between (string.rep...) are timed, not counted.
  local function hook()
    ticks = ticks + 1
    if stopped == nil and ticks > max_ticks then stopped = limit_message end
    if stopped == nil and std.clock() > deadline then stopped = time_message end
    if stopped ~= nil then std.error(stopped, 0) end
  end

  -- pcall and friends must not swallow the budget or memory stop.
  local function rethrow(ok, ...)
    if stopped ~= nil then std.error(stopped, 0) end
    if not ok and (...) == OOM then out_of_memory = true end
    if out_of_memory then std.error(OOM, 0) end
    return ok, ...
  end

  local function load_text(text, name)
    if std.type(text) ~= "string" then return nil, "only source text can be loaded" end
    if std.byte(text, 1) == 27 then return nil, "binary chunks are not allowed" end
    local fn, err = std.loadstring(text, name)
    if not fn then return nil, err end
    std.setfenv(fn, env)
    return fn
  end

  for _, name in std.pairs(base_names) do env[name] = _G[name] end
  env._G = env
  env._VERSION = _VERSION
  env.print = function() end
  env.collectgarbage = function() return 0 end
  env.pcall = function(fn, ...) return rethrow(std.pcall(fn, ...)) end
  env.xpcall = function(fn, handler)
    return rethrow(std.xpcall(fn, function(e)
      if e == OOM then out_of_memory = true end
      return handler(e)
    end))
  end
  env.loadstring = load_text
  env.load = function(chunk, name)
    if std.type(chunk) == "function" then
      local parts = {}
      while true do
        local piece = chunk()
        if piece == nil or piece == "" then break end
        if std.type(piece) ~= "string" then return nil, "reader function must return a string" end
        parts[#parts + 1] = piece
      end
      chunk = std.concat(parts)
    end
    return load_text(chunk, name)
  end
  env.table = copy(libs.table)
  env.os = {
    time = function(t) return std.ostime(t) end,
    date = function(format, t) return std.osdate(format, t) end,
  }
  local modules = { _G = env, table = env.table, os = env.os }

  if open_libs then
    env.string = copy(libs.string, { dump = true })
    env.math = copy(libs.math)
    local co = {}
    co.create = function(fn)
      local thread = std.cocreate(fn)
      std.sethook(thread, hook, "", tick) -- hooks are per coroutine in Lua 5.1
      return thread
    end
    co.resume = function(thread, ...) return rethrow(std.coresume(thread, ...)) end
    co.status, co.yield, co.running = std.costatus, std.coyield, std.corunning
    co.wrap = function(fn)
      local thread = co.create(fn)
      local function unwrap(ok, ...)
        if not ok then std.error((...), 0) end
        return ...
      end
      return function(...) return unwrap(co.resume(thread, ...)) end
    end
    env.coroutine = co
    modules.string, modules.math, modules.coroutine = env.string, env.math, co
    std.setmetatable("", { __index = env.string })
  else
    -- Without the string library gopher-lua strings have no methods either.
    std.setmetatable("", nil)
  end

  env.require = function(name)
    local module = modules[name]
    if module == nil then std.error("module '" .. std.tostring(name) .. "' not found", 2) end
    return module
  end
  env.obj = obj

  local function finish(ok, ...)
    if stopped ~= nil then return "stopped", stopped end
    if not ok then
      local err = ...
      if out_of_memory or err == OOM then return "memory" end
      if std.type(err) == "string" then return "error", err end
      local shown, text = std.pcall(std.tostring, err)
      return "error", shown and text or ("(error object is a " .. std.type(err) .. " value)")
    end
    local count = std.select("#", ...)
    local result = nil
    if count > 0 then result = std.select(count, ...) end -- Argo CD reads the top of the stack
    if std.type(result) ~= "table" then return "ok", std.type(result) end
    local status, message = std.rawget(result, "status"), std.rawget(result, "message")
    return "ok", "table",
      std.type(status), std.type(status) == "string" and status or nil,
      std.type(message), std.type(message) == "string" and message or nil,
      std.next(result) == nil, std.rawget(result, 1) ~= nil
  end

  if std.byte(source, 1) == 27 then return "error", "binary chunks are not allowed" end
  local script, syntax_error = std.loadstring(source, "=<string>")
  if not script then return "error", std.tostring(syntax_error) end
  std.setfenv(script, env)
  std.sethook(hook, "", tick)
  local done, a, b, c, d, e, f, g, h = std.pcall(finish, std.pcall(script))
  std.sethook()
  if not done then
    if stopped ~= nil then return "stopped", stopped end
    if out_of_memory or a == OOM then return "memory" end
    return "error", std.tostring(a)
  end
  return a, b, c, d, e, f, g, h
end
