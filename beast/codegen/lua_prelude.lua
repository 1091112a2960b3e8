-- beast's Lua prelude: Python's arithmetic on LuaJIT doubles with overflow and zero checks, ranges,
-- set operations, divisor loops and lists. Every chunk printed by beast.codegen.lua starts with it.
local _b_R = ...
-- every iterating loop counts down _b_tick and, at zero, calls Python (_b_R.poll returns the next
-- count): Ctrl-C and SIGTERM, which Python handles between its own instructions, reach the loop
local _b_tick, _b_poll = 0, _b_R.poll
local _b_floor, _b_fmod, _b_abs, _b_inf = math.floor, math.fmod, math.abs, math.huge
local _b_error, _b_pcall, _b_yield, _b_type = error, pcall, coroutine.yield, type
local _b_sort = table.sort
local _b_LIM = 9007199254740992
local _b_nz = 1 / -_b_inf      -- -0.0
local function _b_fail(k, a, b, fa, fb, x) _b_error({k, a, b, fa, fb, x}, 0) end
local function _b_big(k) _b_fail(k) end
local function _b_k0(...)     -- the arguments of a Python call, a -0.0 marked (lupa hands it over as 0)
  local n, t = select("#", ...), {...}
  for i = 1, n do
    if t[i] == 0 and 1 / t[i] < 0 then t[i] = "_b_negzero" end
  end
  return unpack(t, 1, n)
end
local function _b_chk(v, k)
  if v >= _b_LIM or v <= -_b_LIM then _b_fail(k, v) end
  return v
end
local function _b_chkn(v, f, k)
  if not f and (v >= _b_LIM or v <= -_b_LIM) then _b_fail(k, v) end
  return v
end
-- Python's & and | of two integers of magnitude below 2**53: LuaJIT's bit library works on 32
-- bits, so each operand is split into a signed high part and an unsigned low 32-bit part
local _b_band32, _b_bor32 = bit.band, bit.bor
local function _b_band(a, b)
  local ah, bh = _b_floor(a / 4294967296), _b_floor(b / 4294967296)
  return _b_band32(ah, bh) * 4294967296 + _b_band32(a - ah * 4294967296, b - bh * 4294967296) % 4294967296
end
local function _b_bor(a, b)
  local ah, bh = _b_floor(a / 4294967296), _b_floor(b / 4294967296)
  return _b_bor32(ah, bh) * 4294967296 + _b_bor32(a - ah * 4294967296, b - bh * 4294967296) % 4294967296
end
local function _b_idiv(a, b, k)
  if b == 0 then _b_fail(k, a, b, false, false) end
  return _b_floor(a / b)
end
local function _b_fdiv(a, b, k, fa, fb)
  if b == 0 then _b_fail(k, a, b, fa, fb) end
  local m = _b_fmod(a, b)
  local d = (a - m) / b
  if m ~= 0 and (b < 0) ~= (m < 0) then d = d - 1 end
  if d ~= 0 then
    local q = _b_floor(d)
    if d - q > 0.5 then q = q + 1 end
    return q
  end
  if fa or fb then return (a / b) * 0 end     -- CPython: copysign(0.0, a / b); an int 0 for ints
  return 0
end
local function _b_mod(a, b, k, fa, fb)
  if b == 0 then _b_fail(k, a, b, fa, fb) end
  local m = _b_fmod(a, b)
  if m ~= 0 then
    if (b < 0) ~= (m < 0) then m = m + b end
    return m
  end
  if (fa or fb) and b < 0 then return _b_nz end  -- CPython: copysign(0.0, b); an int 0 for ints
  return 0
end
local function _b_tdiv(a, b, k, fa, fb)
  if b == 0 then _b_fail(k, a, b, fa, fb) end
  return a / b
end
local function _b_pow(a, b, k, fa, fb)
  if not fa and not fb then
    if b >= 0 then
      local r, base, e = 1, a, b
      while true do
        if e % 2 == 1 then
          r = r * base
          if r >= _b_LIM or r <= -_b_LIM then _b_fail(k, a, b, fa, fb, "overflow") end
        end
        e = _b_floor(e / 2)
        if e == 0 then break end
        base = base * base
        if base >= _b_LIM or base <= -_b_LIM then _b_fail(k, a, b, fa, fb, "overflow") end
      end
      return r
    end
    if a == 0 then _b_fail(k, a, b, fa, fb) end
    return a ^ b
  end
  if a == 0 and b < 0 and b > -_b_inf then _b_fail(k, a, b, fa, fb) end   -- 0.0 ** -inf is inf
  if a < 0 and b ~= _b_floor(b) and b == b and a > -_b_inf and b > -_b_inf and b < _b_inf then
    _b_error({k, a, b, fa, fb, "complex"}, 0)
  end
  local r = a ^ b
  if (r == _b_inf or r == -_b_inf) and a > -_b_inf and a < _b_inf and b > -_b_inf and b < _b_inf then
    _b_fail(k, a, b, fa, fb)
  end
  return r
end
local function _b_min(a, b) if b < a then return b end return a end
local function _b_max(a, b) if b > a then return b end return a end
local function _b_minf(a, b, fa, fb) if b < a then return fb end return fa end
local function _b_maxf(a, b, fa, fb) if b > a then return fb end return fa end
local function _b_rint(v, f, k)
  if f then _b_fail(k, v) end
  return v
end
local function _b_rlim(stop, step, k)
  if step > 0 then return stop - 1 elseif step < 0 then return stop + 1 end
  _b_fail(k)
end
-- len(range(a, b, c)) for a, b, c exact within +-2**53 (k: the zero-step site, ko: where a length of
-- 2**53 or more is reported, k if nil). Past 2**53, hi - lo is rounded (then hi > 0 > lo): the length
-- is summed from hi and -lo - 1, each exact, divided by c with fmod (exact).
local function _b_rlen(a, b, c, k, ko)
  local hi, lo
  if c > 0 then
    if b <= a then return 0 end
    hi, lo = b, a
  elseif c < 0 then
    if b >= a then return 0 end
    hi, lo, c = a, b, -c
  else
    _b_fail(k)
  end
  local d = hi - lo
  if d < _b_LIM then return _b_floor((d - 1) / c) + 1 end
  if c == 1 then _b_fail(ko or k, d) end
  local x, y = hi, -lo - 1
  local rx, ry = _b_fmod(x, c), _b_fmod(y, c)
  return (x - rx) / c + (y - ry) / c + (rx + ry >= c and 2 or 1)
end
local function _b_rlist(a, b, c, k)
  local t, n = {}, 0
  for v = a, _b_rlim(b, c, k), c do n = n + 1; t[n] = v end
  return t
end
local function _b_inrange(v, a, b, c, k)
  if c == 0 then _b_fail(k) end
  if c > 0 then
    if v < a or v >= b then return nil end
  elseif v > a or v <= b then
    return nil
  end
  -- v - a may round past 2**53; the difference of the remainders is exact
  if _b_fmod(_b_fmod(v, c) - _b_fmod(a, c), c) ~= 0 then return nil end
  return v
end
local function _b_in1(v, a, b)
  if v >= a and v < b then return v end
  return nil
end
local function _b_nonint(k, v, f) _b_fail(k, v, nil, f) end
local function _b_isint(v) return _b_type(v) == "number" and v == _b_floor(v) end
local function _b_setop(op, a, b)
  local seen, out, n = {}, {}, 0
  if op == 1 then
    for i = 1, #a do local v = a[i]; if not seen[v] then seen[v] = true; n = n + 1; out[n] = v end end
    for i = 1, #b do local v = b[i]; if not seen[v] then seen[v] = true; n = n + 1; out[n] = v end end
  else
    local inb = {}
    for i = 1, #b do inb[b[i]] = true end
    local want = op == 2
    for i = 1, #a do
      local v = a[i]
      if not seen[v] and (inb[v] == true) == want then seen[v] = true; n = n + 1; out[n] = v end
    end
  end
  return out
end
local function _b_dlist(s0, st, n, tb, bad)
  if tb then return tb end
  local t = {}
  for j = 0, n - 1 do t[j + 1] = s0 + j * st end
  return t
end
local function _b_clist(f, ...)
  local out = {}
  local ok, e = _b_pcall(f, out, ...)
  if not ok then _b_error(e, 0) end
  return out
end
local function _b_divisors(n, a, b)
  local t, k = {}, 0
  if n == 0 then
    for v = a, b - 1 do k = k + 1; t[k] = v end
    return t
  end
  if n < 0 then n = -n end
  if b - a <= 48 then
    for v = a, b - 1 do if _b_fmod(n, v) == 0 then k = k + 1; t[k] = v end end
    return t
  end
  local large, m = {}, 0
  local d = 1
  while d * d <= n do
    if _b_fmod(n, d) == 0 then
      if d >= a and d < b then k = k + 1; t[k] = d end
      local e = n / d
      if e ~= d then m = m + 1; large[m] = e end
    end
    d = d + 1
  end
  for i = m, 1, -1 do local e = large[i]; if e >= a and e < b then k = k + 1; t[k] = e end end
  return t
end
local function _b_opt(v)
  if v == nil or v == false then return {} end
  return {v}
end
local function _b_reraise(e) _b_error(e, 0) end
local function _b_inlist(t, x)
  for i = 1, #t do if t[i] == x then return true end end
  return false
end
local function _b_idx(t, i, k, f)
  if f then _b_fail(k, i, nil, f) end
  local n = #t
  if i < 0 then i = i + n end
  if i < 0 or i >= n then _b_fail(k, i) end
  return t[i + 1]
end
local function _b_setidx(t, i, v, k, f)
  if f then _b_fail(k, i, nil, f) end
  local n = #t
  if i < 0 then i = i + n end
  if i < 0 or i >= n then _b_fail(k, i) end
  t[i + 1] = v
end
local function _b_copy(t)
  local c = {}
  for i = 1, #t do c[i] = t[i] end
  return c
end
local function _b_concat(a, b)
  local c, n = {}, #a
  for i = 1, n do c[i] = a[i] end
  for i = 1, #b do c[n + i] = b[i] end
  return c
end
local function _b_sorted(t)
  local c = _b_copy(t)
  _b_sort(c)
  return c
end
local function _b_toint(v, f, k)
  if f then
    if v ~= v or v == _b_inf or v == -_b_inf then _b_fail(k, v, nil, true) end
    if v >= 0 then v = _b_floor(v) else v = -_b_floor(-v) end
  end
  if v >= _b_LIM or v <= -_b_LIM then _b_fail(k, v, nil, true, nil, "overflow") end
  return v
end
