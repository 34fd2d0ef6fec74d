// Device (device.h): buffers, recording, submission, profiling and injected faults.
#include <algorithm>
#include <cstring>

#include "runtime/backends/webgpu/device_impl.h"

namespace scellis::runtime::webgpu {

// ---- buffers ----

BufferId Device::CreateBuffer(uint64_t bytes) {
  Impl& m = *impl_;
  if (++m.allocations == m.fail_allocation) m.fail_next_allocation = true;
  if (m.fail_next_allocation) {
    m.fail_next_allocation = false;
    m.sink->Record(RuntimeError(
        "gpu-out-of-memory",
        "a buffer of " + std::to_string(bytes) + " bytes could not be allocated (injected fault)"));
  }
  Impl::Buf b;
  b.size = bytes;
  b.alloc = std::max<uint64_t>(4, RoundUp(bytes, 4));
  auto it = m.pool.find(b.alloc);
  if (it != m.pool.end() && !it->second.empty()) {
    b.handle = it->second.back();
    it->second.pop_back();
    m.pooled_bytes -= b.alloc;
    m.stats.buffers_reused++;
  } else {
    b.handle = m.NewBuffer(b.alloc, kStorageUsage);
    m.stats.buffers_allocated++;
  }
  BufferId id{m.next_buffer_id++};
  m.buffers.emplace(id.value, b);
  return id;
}

void Device::ReleaseBuffer(BufferId id) {
  Impl& m = *impl_;
  auto it = m.buffers.find(id.value);
  if (it == m.buffers.end()) return;
  m.pool[it->second.alloc].push_back(it->second.handle);
  m.pooled_bytes += it->second.alloc;
  m.buffers.erase(it);
}

uint64_t Device::kept_staging_bytes() const {
  uint64_t bytes = 0;
  for (const auto& [size, list] : impl_->read_staging_pool) bytes += size * list.size();
  return bytes;
}

uint64_t Device::BufferSize(BufferId id) const {
  auto* b = impl_->FindBuffer(id);
  return b ? b->size : 0;
}

void Device::TrimPool() {
  Impl& m = *impl_;
  for (auto& [size, list] : m.read_staging_pool) {
    for (WGPUBuffer b : list) m.DestroyBuffer(b);
  }
  m.read_staging_pool.clear();
  if (m.pool.empty()) return;
  // Bind groups may name pooled buffers; drop them all rather than track which.
  m.ClearBindGroups();
  for (auto& [size, list] : m.pool) {
    for (WGPUBuffer b : list) m.DestroyBuffer(b);
  }
  m.pool.clear();
  m.pooled_bytes = 0;
}

Status Device::Write(BufferId id, uint64_t offset, const void* src, uint64_t bytes) {
  Impl& m = *impl_;
  Impl::Buf* b = m.FindBuffer(id);
  if (!b)
    return InternalError("webgpu-device", "Write to unknown buffer id " + std::to_string(id.value));
  if (offset > b->size || bytes > b->size - offset) {
    return UserError("buffer-out-of-range", "",
                     "write of " + std::to_string(bytes) + " bytes at offset " +
                         std::to_string(offset) + " overruns a buffer of " +
                         std::to_string(b->size) + " bytes");
  }
  const bool ends_at_end = offset + bytes == b->size;
  if (offset % 4 != 0 || (bytes % 4 != 0 && !ends_at_end)) {
    return UserError("unaligned-write", "",
                     "write of " + std::to_string(bytes) + " bytes at offset " +
                         std::to_string(offset) + ": WebGPU writes whole 4-byte words",
                     "write at a multiple of 4 bytes, and a multiple of 4 bytes unless the "
                     "write ends at the end of the buffer");
  }
  SCELLIS_TRY(m.Sticky());
  if (bytes == 0) return Status::Ok();
  m.Flush();  // work recorded before this write must see the old contents
  // Dawn stages a write in a mapped buffer of the write's whole size until the GPU has copied it:
  // in pieces, each copied before the next is staged, a 1 GiB parameter holds at most one piece.
  const auto* from = static_cast<const uint8_t*>(src);
  for (uint64_t done = 0; done < bytes; done += kUploadPieceBytes) {
    const uint64_t piece = std::min(kUploadPieceBytes, bytes - done);
    if (piece % 4 != 0) {  // the last piece, ending mid-word: WebGPU writes whole words
      std::vector<uint8_t> padded(from + done, from + done + piece);
      padded.resize(RoundUp(piece, 4), 0);
      m.p.QueueWriteBuffer(m.queue, b->handle, offset + done, padded.data(), padded.size());
    } else {
      m.p.QueueWriteBuffer(m.queue, b->handle, offset + done, from + done, piece);
    }
    if (done + piece < bytes) SCELLIS_TRY(m.WaitIdle());
  }
  m.stats.writes++;
  m.stats.bytes_uploaded += bytes;
  return m.Sticky();
}

Status Device::Read(BufferId id, uint64_t offset, uint64_t bytes, void* dst) {
  SCELLIS_ASSIGN_OR_RETURN(ReadTicket ticket, StartRead(id, offset, bytes));
  return FinishRead(ticket, dst);
}

Result<ReadTicket> Device::StartRead(BufferId id, uint64_t offset, uint64_t bytes) {
  Impl& m = *impl_;
  const DawnProcs& p = m.p;
  Impl::Buf* b = m.FindBuffer(id);
  if (!b)
    return InternalError("webgpu-device",
                         "Read from unknown buffer id " + std::to_string(id.value));
  if (offset > b->size || bytes > b->size - offset) {
    return UserError("buffer-out-of-range", "",
                     "read of " + std::to_string(bytes) + " bytes at offset " +
                         std::to_string(offset) + " overruns a buffer of " +
                         std::to_string(b->size) + " bytes");
  }
  SCELLIS_TRY(m.Sticky());
  if (m.recording_error) return Submit();  // reports the bad recording
  Impl::PendingRead r;
  r.bytes = bytes;
  if (bytes > 0) {
    // Copies and maps move whole words: widen the range to 4-byte bounds (inside the
    // allocation).
    const uint64_t begin = offset / 4 * 4;
    r.skip = offset - begin;
    r.len = RoundUp(offset + bytes, 4) - begin;
    r.staging_alloc = RoundUp(r.len, 256);
    std::vector<WGPUBuffer>& free = m.read_staging_pool[r.staging_alloc];
    if (free.empty()) {
      r.staging = m.NewBuffer(r.staging_alloc, WGPUBufferUsage_MapRead | WGPUBufferUsage_CopyDst);
    } else {
      r.staging = free.back();
      free.pop_back();
    }
    m.EnsureEncoder();
    m.EndPass();
    p.CommandEncoderCopyBufferToBuffer(m.encoder, b->handle, begin, r.staging, 0, r.len);
    m.Flush();

    size_t map_offset = 0;
    if (m.fail_next_map) {
      m.fail_next_map = false;
      map_offset = 4;  // mapAsync wants a multiple of 8: Dawn rejects the map
    }
    // The scope keeps a refused map from also surfacing as an uncaptured error: the map's own
    // status says what happened.
    p.DevicePushErrorScope(m.device, WGPUErrorFilter_Validation);
    r.done = new MapDone;
    WGPUBufferMapCallbackInfo cb{};
    cb.mode = WGPUCallbackMode_WaitAnyOnly;
    cb.callback = [](WGPUMapAsyncStatus status, WGPUStringView message, void* u1, void*) {
      auto* s = static_cast<MapDone*>(u1);
      s->status = status;
      s->message = Str(message);
    };
    cb.userdata1 = r.done;
    r.future = p.BufferMapAsync(r.staging, WGPUMapMode_Read, map_offset, r.len, cb);
    m.stats.maps++;
    r.scope_error = m.PopScope();
  }
  const ReadTicket ticket{m.next_read_id++};
  m.reads.emplace(ticket.value, std::move(r));
  return ticket;
}

Status Device::FinishRead(ReadTicket ticket, void* dst) {
  Impl& m = *impl_;
  const DawnProcs& p = m.p;
  auto it = m.reads.find(ticket.value);
  if (it == m.reads.end()) {
    return InternalError("webgpu-device", "FinishRead of unknown or finished read ticket " +
                                              std::to_string(ticket.value));
  }
  Impl::PendingRead r = std::move(it->second);
  m.reads.erase(it);
  if (!r.staging) return Status::Ok();
  std::string why = m.Wait(r.future);
  if (!why.empty()) {
    // The map may still complete: its buffer and callback state are left to it.
    return m.Poison(RuntimeError("gpu-timeout", "waiting for a read-back: " + why));
  }
  std::unique_ptr<MapDone> done(r.done);
  if (done->status != WGPUMapAsyncStatus_Success) {
    m.DestroyBuffer(r.staging);
    std::string msg = done->message;
    if (r.scope_error.find(msg) != std::string::npos) {
      msg = r.scope_error;  // the same complaint with Dawn's context lines
    } else if (!r.scope_error.empty()) {
      msg += (msg.empty() ? "" : "; ") + r.scope_error;
    }
    return m.Poison(RuntimeError(
        "map-failed", "mapping the read-back buffer failed (" +
                          OrUnknown(MapAsyncStatusName(done->status), done->status) + "): " + msg));
  }
  // Mapped: whatever happens next, the staging buffer is unmapped and serves the next read of
  // its size, or is freed when it is large (see kMaxKeptStagingBytes).
  auto give_back = [&] {
    p.BufferUnmap(r.staging);
    if (r.staging_alloc > kMaxKeptStagingBytes) {
      m.DestroyBuffer(r.staging);
    } else {
      m.read_staging_pool[r.staging_alloc].push_back(r.staging);
    }
  };
  p.InstanceProcessEvents(m.instance);
  if (Status s = m.Sticky(); !s.ok()) {  // the copy (or earlier work) failed: the data is junk
    give_back();
    return s;
  }
  const void* mapped = p.BufferGetConstMappedRange(r.staging, 0, r.len);
  if (!mapped) {
    give_back();
    return m.Poison(RuntimeError("map-failed", "the mapped read-back range is not accessible"));
  }
  std::memcpy(dst, static_cast<const uint8_t*>(mapped) + r.skip, r.bytes);
  give_back();
  m.stats.bytes_read += r.bytes;
  return Status::Ok();
}

// ---- recording ----

void Device::Dispatch(PipelineId pipeline, const std::vector<Binding>& bindings, uint32_t x,
                      uint32_t y, uint32_t z) {
  Impl& m = *impl_;
  const DawnProcs& p = m.p;
  if (m.recording_error) return;
  auto pit = m.pipelines.find(pipeline.value);
  if (pit == m.pipelines.end()) {
    m.recording_error = InternalError(
        "webgpu-device", "Dispatch with unknown pipeline id " + std::to_string(pipeline.value));
    return;
  }
  const uint32_t max = m.info.limits.max_compute_workgroups_per_dimension;
  if (x > max || y > max || z > max) {
    m.recording_error = UserError(
        "dispatch-too-large", "",
        "dispatch of " + std::to_string(x) + " x " + std::to_string(y) + " x " + std::to_string(z) +
            " workgroups exceeds the device's " + std::to_string(max) + " per dimension",
        "spread the workgroups over y and z (see SplitWorkgroups)");
    return;
  }
  Impl::Pipe& pipe = pit->second;

  WGPUBindGroup group = nullptr;
  if (!bindings.empty()) {
    std::vector<WGPUBindGroupEntry>& entries = m.bind_entries;
    entries.assign(bindings.size(), WGPUBindGroupEntry{});
    std::string& key = m.bind_key;
    key.assign(reinterpret_cast<const char*>(&pipeline.value), sizeof pipeline.value);
    for (size_t i = 0; i < bindings.size(); ++i) {
      const Binding& bd = bindings[i];
      Impl::Buf* b = m.FindBuffer(bd.buffer);
      if (!b) {
        m.recording_error = InternalError("webgpu-device", "Dispatch binds unknown buffer id " +
                                                               std::to_string(bd.buffer.value) +
                                                               " at binding " + std::to_string(i));
        return;
      }
      WGPUBindGroupEntry& e = entries[i];
      e.binding = static_cast<uint32_t>(i);
      e.buffer = b->handle;
      e.offset = bd.offset;
      e.size = bd.size == 0 ? WGPU_WHOLE_SIZE : bd.size;
      key.append(reinterpret_cast<const char*>(&e.buffer), sizeof e.buffer);
      key.append(reinterpret_cast<const char*>(&e.offset), sizeof e.offset);
      key.append(reinterpret_cast<const char*>(&e.size), sizeof e.size);
    }
    auto it = m.bind_groups.find(key);
    if (it != m.bind_groups.end()) {
      group = it->second;
    } else {
      if (!pipe.layout) pipe.layout = p.ComputePipelineGetBindGroupLayout(pipe.pipeline, 0);
      WGPUBindGroupDescriptor bgd{};
      bgd.layout = pipe.layout;
      bgd.entryCount = entries.size();
      bgd.entries = entries.data();
      group = p.DeviceCreateBindGroup(m.device, &bgd);
      if (m.bind_groups.size() >= 4096) m.ClearBindGroups();
      m.bind_groups.emplace(key, group);
    }
  }
  const bool timed = m.timestamp_set && m.timed_dispatches < kMaxTimedDispatches;
  if (timed) {
    // A pass of its own, whose beginning and end timestamps bracket this one dispatch.
    m.EnsureEncoder();
    m.EndPass();
    WGPUPassTimestampWrites writes{};
    writes.querySet = m.timestamp_set;
    writes.beginningOfPassWriteIndex = 2 * m.timed_dispatches;
    writes.endOfPassWriteIndex = 2 * m.timed_dispatches + 1;
    WGPUComputePassDescriptor pd{};
    pd.timestampWrites = &writes;
    m.pass = p.CommandEncoderBeginComputePass(m.encoder, &pd);
    m.timed_dispatches++;
  }
  m.EnsurePass();
  p.ComputePassEncoderSetPipeline(m.pass, pipe.pipeline);
  if (group) p.ComputePassEncoderSetBindGroup(m.pass, 0, group, 0, nullptr);
  p.ComputePassEncoderDispatchWorkgroups(m.pass, x, y, z);
  m.recorded_dispatches++;
  // A timed pass holds its one dispatch: an untimed one past the cap must not land inside it.
  if (timed) m.EndPass();
}

void Device::Copy(BufferId src, uint64_t src_offset, BufferId dst, uint64_t dst_offset,
                  uint64_t bytes) {
  Impl& m = *impl_;
  if (m.recording_error) return;
  Impl::Buf* s = m.FindBuffer(src);
  Impl::Buf* d = m.FindBuffer(dst);
  if (!s || !d) {
    m.recording_error = InternalError("webgpu-device", "Copy between unknown buffer ids " +
                                                           std::to_string(src.value) + " -> " +
                                                           std::to_string(dst.value));
    return;
  }
  m.EnsureEncoder();
  m.EndPass();
  m.p.CommandEncoderCopyBufferToBuffer(m.encoder, s->handle, src_offset, d->handle, dst_offset,
                                       bytes);
  m.stats.copies++;
}

void Device::Clear(BufferId id, uint64_t offset, uint64_t bytes) {
  Impl& m = *impl_;
  if (m.recording_error) return;
  Impl::Buf* b = m.FindBuffer(id);
  if (!b) {
    m.recording_error =
        InternalError("webgpu-device", "Clear of unknown buffer id " + std::to_string(id.value));
    return;
  }
  m.EnsureEncoder();
  m.EndPass();
  m.p.CommandEncoderClearBuffer(m.encoder, b->handle, offset, bytes == 0 ? WGPU_WHOLE_SIZE : bytes);
}

Status Device::Submit() {
  Impl& m = *impl_;
  SCELLIS_TRY(m.RecordingToSubmit());
  // Nothing recorded and nothing sent unwaited: the GPU has nothing of ours to finish.
  if (!m.Flush() && !m.sent_unwaited) {
    m.p.InstanceProcessEvents(m.instance);
    return m.Sticky();
  }
  m.sent_unwaited = false;
  return m.WaitIdle();
}

Status Device::Send() {
  Impl& m = *impl_;
  SCELLIS_TRY(m.RecordingToSubmit());
  m.sent_unwaited |= m.Flush();
  return m.Sticky();
}

// ---- profiling ----

bool Device::gpu_timestamps() const {
  return impl_->timestamp_set != nullptr;
}

Result<std::vector<GpuInterval>> Device::TakeGpuTimes() {
  Impl& m = *impl_;
  std::vector<GpuInterval> out;
  if (!m.timestamp_set) return out;
  SCELLIS_TRY(Submit());
  if (m.timed_dispatches == 0) return out;
  std::vector<uint64_t> ticks(2 * size_t{m.timed_dispatches});
  SCELLIS_TRY(Read(m.timestamp_resolve, 0, ticks.size() * sizeof(uint64_t), ticks.data()));
  for (size_t i = 0; i < ticks.size(); i += 2) out.push_back({ticks[i], ticks[i + 1]});
  m.timed_dispatches = m.resolved_dispatches = 0;
  return out;
}

// ---- faults ----

void Device::InjectFault(Fault fault) {
  Impl& m = *impl_;
  switch (fault) {
    case Fault::kFailNextSubmit:
      m.fail_next_submit = true;
      break;
    case Fault::kFailNextMap:
      m.fail_next_map = true;
      break;
    case Fault::kLoseDevice:
      m.p.DeviceDestroy(m.device);
      m.p.InstanceProcessEvents(m.instance);
      break;
    case Fault::kFailNextAllocation:
      m.fail_next_allocation = true;
      break;
  }
}

}  // namespace scellis::runtime::webgpu
