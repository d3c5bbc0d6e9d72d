-- Argo CD health check for every keyward.dev kind (Lua 5.1). One script serves them all through
-- argocd-cm's wildcard form (resource.customizations with keyward.dev/*); argocd/argocd-cm.yaml,
-- argocd/argocd-cm-health.yaml and argocd/resource_customizations/ are rendered from this file
-- (npx node hack/tools/render-argocd-cm.ts). argocd/README.md gives the mapping and why.
hs = {}

-- Reasons keyward retries by itself, or that clear once another object in the same sync
-- appears or becomes ready: not worth a human's attention yet.
local transient = {
  ServiceUnavailable = true, RateLimited = true, Conflict = true, InternalError = true,
  ReferenceNotReady = true, ProviderConfigNotFound = true, CredentialsNotFound = true,
  NotListed = true, JobInProgress = true,
}
-- Ready=False reasons of normal progress.
local progressing = {
  Creating = true, Deleting = true, Pending = true, JobPending = true, JobRunning = true,
  SyncPending = true, Renewing = true, RemovingSecrets = true, WaitingForJob = true,
}

local function condition(conditions, kind)
  if conditions == nil then return nil end
  for _, c in ipairs(conditions) do
    if c.type == kind then return c end
  end
  return nil
end

local function describe(c)
  local text = c.reason or c.type
  if c.message ~= nil and c.message ~= "" then text = text .. ": " .. c.message end
  return text
end

local function set(status, message)
  hs.status = status
  hs.message = message
  return hs
end

local meta = obj.metadata or {}
local status = obj.status
local generation = meta.generation

if status == nil or status.conditions == nil or #status.conditions == 0 then
  return set("Progressing", "Waiting for keyward to reconcile")
end
if generation ~= nil and (status.observedGeneration == nil or status.observedGeneration < generation) then
  return set("Progressing", "Waiting for keyward to reconcile generation " .. tostring(generation))
end

local ready = condition(status.conditions, "Ready")
local synced = condition(status.conditions, "Synced")

if synced ~= nil and synced.status == "False" then
  if synced.reason == "ReconcilePaused" then
    return set("Suspended", describe(synced))
  end
  -- ObserveOnly: a difference keyward was told not to correct; Ready tells the health.
  if synced.reason ~= "ObserveOnly" then
    if transient[synced.reason] then
      return set("Progressing", describe(synced) .. " (retrying)")
    end
    return set("Degraded", describe(synced))
  end
end

if ready ~= nil and ready.status == "False" and not progressing[ready.reason] and not transient[ready.reason] then
  return set("Degraded", describe(ready))
end

-- A SecretSync runs jobs at the service: sync, import and remove.
if obj.kind == "SecretSync" then
  -- { status field, job name, message field }. Argo CD's Lua has no string library: no string.upper.
  local jobs = {
    { "syncStatus", "sync", "lastSyncMessage" },
    { "importStatus", "import", "lastImportMessage" },
    { "removeStatus", "remove", "lastRemoveMessage" },
  }
  for _, job in ipairs(jobs) do
    local state = status[job[1]]
    if state == "pending" or state == "running" then
      return set("Progressing", "The " .. job[2] .. " job is " .. state)
    end
  end
  for _, job in ipairs(jobs) do
    if status[job[1]] == "failed" then
      local message = "The " .. job[2] .. " job failed"
      local detail = status[job[3]]
      if detail ~= nil and detail ~= "" then message = message .. ": " .. detail end
      return set("Degraded", message)
    end
  end
end

if meta.deletionTimestamp ~= nil then
  return set("Progressing", "Being deleted")
end
if ready == nil or ready.status ~= "True" then
  if ready == nil then return set("Progressing", "Waiting for the Ready condition") end
  return set("Progressing", describe(ready))
end
if generation ~= nil and ready.observedGeneration ~= nil and ready.observedGeneration < generation then
  return set("Progressing", "Waiting for keyward to reconcile generation " .. tostring(generation))
end
return set("Healthy", describe(ready))
