import dataclasses
import json
import sys
import types

import pytest

from beast.lang import devices
from beast.lang.devices import (COMPUTE_CAPABILITIES, DeviceProfile, compute_capability, describe_devices, load_profile_json, profile_names, query_local_gpu, resolve_device)
from beast.errors import DeviceError

KB = 1024

# Luszczek et al. 2016, Fig. 8 (Tesla K40c device query) and Fig. 9 (cc 3.5 lookup).
PAPER_K40C = dict(
    max_threads_per_block=1024, max_threads_dim_x=1024, max_threads_dim_y=1024,
    max_shared_mem_per_block=49152, warp_size=32, max_regs_per_block=65536,
    max_threads_per_multi_processor=2048, cudamajor=3, cudaminor=5,
    max_registers_per_multi_processor=65536, max_shmem_per_multi_processor=49152,
    float_size=4, max_blocks_per_multi_processor=16, max_warps_per_multi_processor=64,
    max_registers_per_thread=255)

ALL_CCS = ["3.0", "3.2", "3.5", "3.7", "5.0", "5.2", "5.3", "6.0", "6.1", "6.2", "7.0", "7.2",
           "7.5", "8.0", "8.6", "8.7", "8.9", "9.0", "10.0", "10.1", "10.3", "11.0", "12.0", "12.1"]


def write(tmp_path, obj, name="dev.json"):
    path = tmp_path / name
    path.write_text(obj if isinstance(obj, str) else json.dumps(obj, indent=2))
    return path


@pytest.fixture
def no_cupy(monkeypatch):
    monkeypatch.setitem(sys.modules, "cupy", None)


# --- the paper's K40c -------------------------------------------------------------------------

@pytest.mark.parametrize("field,value", sorted(PAPER_K40C.items()))
def test_k40c_matches_paper_figs_8_and_9(field, value):
    assert getattr(resolve_device("k40c"), field) == value


def test_k40c_product_facts_and_default():
    k40c = resolve_device(None)
    assert k40c.name == "k40c"
    assert k40c.max_threads_dim_z == 64
    assert (k40c.multi_processor_count, k40c.clock_rate_khz) == (15, 745_000)
    assert k40c.peak_gflops("double") == pytest.approx(1430.4)
    assert k40c.peak_gflops("single") == pytest.approx(4291.2)


def test_paper_fig9_cc_30():
    cc = compute_capability(3, 0)
    assert (cc.max_blocks_per_sm, cc.max_warps_per_sm, cc.max_registers_per_thread) == (16, 64, 63)


# --- the compute-capability table -------------------------------------------------------------

def test_every_cc_present():
    assert [cc.version for cc in COMPUTE_CAPABILITIES.values()] == ALL_CCS


@pytest.mark.parametrize("cc", COMPUTE_CAPABILITIES.values(), ids=lambda cc: cc.version)
def test_cc_rows_are_consistent(cc):
    assert cc.max_warps_per_sm * cc.warp_size == cc.max_threads_per_sm
    assert cc.max_threads_per_block <= cc.max_threads_per_sm
    assert cc.max_block_dims == (1024, 1024, 64)
    assert cc.max_registers_per_block <= cc.registers_per_sm
    assert cc.max_registers_per_thread in (63, 255)
    assert cc.shared_mem_per_block == 48 * KB
    assert cc.shared_mem_per_block <= cc.shared_mem_per_block_optin <= cc.shared_mem_per_sm
    assert cc.fp64_per_clock <= cc.fp32_per_clock


@pytest.mark.parametrize("version,blocks,warps,smem_sm_kb,optin_kb", [
    ("7.0", 32, 64, 96, 96),
    ("7.5", 16, 32, 64, 64),
    ("8.0", 32, 64, 164, 163),
    ("8.6", 16, 48, 100, 99),
    ("8.7", 16, 48, 164, 163),
    ("8.9", 24, 48, 100, 99),
    ("9.0", 32, 64, 228, 227),
    ("10.0", 32, 64, 228, 227),
    ("11.0", 24, 48, 228, 227),
    ("12.0", 24, 48, 100, 99),
])
def test_cc_spot_checks_against_nvidia_table(version, blocks, warps, smem_sm_kb, optin_kb):
    cc = compute_capability(*map(int, version.split(".")))
    assert (cc.max_blocks_per_sm, cc.max_warps_per_sm) == (blocks, warps)
    assert cc.shared_mem_per_sm == smem_sm_kb * KB
    assert cc.shared_mem_per_block_optin == optin_kb * KB
    assert cc.registers_per_sm == 64 * 1024 and cc.max_registers_per_thread == 255


def test_thor_renumbering_keeps_the_facts():
    old, new = compute_capability(10, 1), compute_capability(11, 0)
    assert dataclasses.replace(old, major=11, minor=0) == new


def test_unknown_cc():
    with pytest.raises(DeviceError, match="unknown compute capability 4.0") as info:
        compute_capability(4, 0)
    assert "9.0" in str(info.value)


# --- named profiles ---------------------------------------------------------------------------

def test_profile_names():
    names = profile_names()
    assert names == sorted(names)
    assert {"k40c", "v100", "a100", "h100", "h200"} <= set(names)


@pytest.mark.parametrize("name,cc,sms,fp64_tflops", [
    ("v100", (7, 0), 80, 7.8), ("a100", (8, 0), 108, 9.7), ("h100", (9, 0), 132, 33.5),
    ("h200", (9, 0), 132, 33.5), ("p100", (6, 0), 56, 5.3),
])
def test_profiles_from_cc_table(name, cc, sms, fp64_tflops):
    profile = resolve_device(name)
    table = COMPUTE_CAPABILITIES[cc]
    assert profile.cc == cc and profile.multi_processor_count == sms
    assert profile.max_blocks_per_multi_processor == table.max_blocks_per_sm
    assert profile.max_warps_per_multi_processor == table.max_warps_per_sm
    assert profile.max_registers_per_thread == table.max_registers_per_thread
    assert profile.max_shared_mem_per_block_optin == table.shared_mem_per_block_optin
    assert profile.peak_gflops("double") / 1000 == pytest.approx(fp64_tflops, abs=0.1)


def test_h200_differs_from_h100_only_in_name_and_bandwidth():
    h100, h200 = resolve_device("h100"), resolve_device("h200")
    assert h200.replace(name="h100", memory_bandwidth_gbs=h100.memory_bandwidth_gbs) == h100


def test_replace_and_as_dict():
    k40c = resolve_device("k40c")
    small = k40c.replace(max_threads_dim_x=16, max_threads_per_block=64)
    assert (small.max_threads_dim_x, small.max_threads_per_block) == (16, 64)
    assert k40c.max_threads_dim_x == 1024
    assert list(k40c.as_dict())[:2] == ["name", "max_threads_per_block"]
    with pytest.raises(DeviceError, match="no field 'max_thread_dim_x'") as info:
        k40c.replace(max_thread_dim_x=1)
    assert "did you mean 'max_threads_dim_x'" in str(info.value)
    for key, value in (("warp_size", "32"), ("warp_size", -1), ("name", 3), ("warp_size", True)):
        with pytest.raises(DeviceError, match=f"'{key}' must be"):     # as a JSON profile's values
            k40c.replace(**{key: value})


def test_peak_gflops_unknown():
    k40c = resolve_device("k40c")
    assert k40c.replace(clock_rate_khz=None).peak_gflops("double") is None
    with pytest.raises(DeviceError, match="unknown precision"):
        k40c.peak_gflops("half")


# --- resolve_device ---------------------------------------------------------------------------

@pytest.mark.parametrize("spec", ["H100", "h100", " h100 ", "H100-SXM5"])
def test_resolve_names_case_insensitive(spec):
    assert resolve_device(spec) is devices.PROFILES["h100"]


def test_resolve_profile_is_identity():
    profile = resolve_device("a100").replace(name="mine")
    assert resolve_device(profile) is profile


def test_resolve_unknown_name_hints():
    with pytest.raises(DeviceError, match="unknown device 'h10'") as info:
        resolve_device("h10")
    text = str(info.value)
    assert "did you mean 'h100'?" in text and "k40c" in text and "auto" in text


def test_resolve_path(tmp_path):
    path = write(tmp_path, {"cudamajor": 8, "cudaminor": 6}, name="ga102.json")
    assert resolve_device(str(path)).name == "ga102"
    assert resolve_device(path).max_warps_per_multi_processor == 48
    with pytest.raises(DeviceError, match="cannot read device profile"):
        resolve_device(str(tmp_path / "missing.json"))


def test_resolve_auto_without_cupy(no_cupy):
    with pytest.raises(DeviceError) as info:
        resolve_device("auto")
    assert "no GPU found" in str(info.value) and "CuPy is not installed" in str(info.value)


# --- JSON profiles ----------------------------------------------------------------------------

def test_json_fills_from_table(tmp_path):
    profile = load_profile_json(write(tmp_path, {"cudamajor": 3, "cudaminor": 5}))
    assert {k: getattr(profile, k) for k in PAPER_K40C} == PAPER_K40C
    assert profile.name == "dev" and profile.multi_processor_count is None
    assert profile.peak_gflops("double") is None


def test_json_overrides_fig8_and_fig9(tmp_path):
    data = {"name": "tiny", "cudamajor": 9, "cudaminor": 0, "max_threads_dim_x": 64,
            "max_blocks_per_multi_processor": 4, "max_warps_per_multi_processor": 8,
            "max_registers_per_thread": 128, "multi_processor_count": 2,
            "clock_rate_khz": 1_000_000, "memory_bandwidth_gbs": 10.5}
    profile = load_profile_json(write(tmp_path, data))
    for key, value in data.items():
        assert getattr(profile, key) == value
    assert profile.max_threads_dim_y == 1024
    assert profile.peak_gflops("double") == pytest.approx(2 * 64 * 2 * 1e6 / 1e6)


def test_json_unknown_key(tmp_path):
    path = write(tmp_path, {"cudamajor": 3, "cudaminor": 5, "max_thread_per_block": 512})
    with pytest.raises(DeviceError) as info:
        load_profile_json(path)
    text = str(info.value)
    assert "unknown field in device profile: 'max_thread_per_block'" in text
    assert "did you mean 'max_threads_per_block'?" in text
    assert f"{path}:4:" in text


def test_json_missing_cc(tmp_path):
    with pytest.raises(DeviceError, match="lacks cudaminor"):
        load_profile_json(write(tmp_path, {"cudamajor": 3}))


def test_json_unknown_cc_names_missing_fields(tmp_path):
    with pytest.raises(DeviceError) as info:
        load_profile_json(write(tmp_path, {"cudamajor": 99, "cudaminor": 0, "warp_size": 32}))
    text = str(info.value)
    assert "unknown compute capability 99.0" in text
    assert "max_threads_per_block" in text and "max_registers_per_thread" in text
    assert "warp_size" not in text.split("hint:")[0]


def test_json_unknown_cc_with_every_field(tmp_path):
    data = dict(PAPER_K40C, cudamajor=99, cudaminor=0, max_threads_dim_z=64)
    profile = load_profile_json(write(tmp_path, data))
    assert profile.cc == (99, 0)
    assert profile.max_shared_mem_per_block_optin == 49152
    assert profile.peak_gflops("double") is None


def test_json_bad_value(tmp_path):
    path = write(tmp_path, {"cudamajor": 3, "cudaminor": 5, "warp_size": "32"})
    with pytest.raises(DeviceError, match="'warp_size' must be a non-negative integer") as info:
        load_profile_json(path)
    assert f"{path}:4:" in str(info.value)


def test_json_syntax_error_has_file_and_line(tmp_path):
    path = write(tmp_path, '{\n  "cudamajor": 3\n  "cudaminor": 5\n}\n')
    with pytest.raises(DeviceError) as info:
        load_profile_json(path)
    text = str(info.value)
    assert text.startswith(f"{path}:3:3: error: invalid JSON: Expecting ',' delimiter")
    assert '"cudaminor": 5' in text


def test_json_not_an_object(tmp_path):
    with pytest.raises(DeviceError, match="JSON object"):
        load_profile_json(write(tmp_path, "[3, 5]"))


# --- the local GPU through CuPy (faked: no GPU here) ------------------------------------------

def fake_cupy(monkeypatch, count=1, props=None, count_error=None):
    def get_count():
        if count_error:
            raise count_error
        return count

    runtime = types.SimpleNamespace(getDeviceCount=get_count,
                                    getDeviceProperties=lambda index: props)
    module = types.ModuleType("cupy")
    module.cuda = types.SimpleNamespace(runtime=runtime)
    monkeypatch.setitem(sys.modules, "cupy", module)


H100_PROPS = {
    "name": b"NVIDIA H100 80GB HBM3", "major": 9, "minor": 0, "warpSize": 32,
    "maxThreadsPerBlock": 1024, "maxThreadsDim": (1024, 1024, 64), "sharedMemPerBlock": 49152,
    "regsPerBlock": 65536, "maxThreadsPerMultiProcessor": 2048, "regsPerMultiprocessor": 65536,
    "sharedMemPerMultiprocessor": 233472, "sharedMemPerBlockOptin": 232448,
    "maxBlocksPerMultiProcessor": 32, "multiProcessorCount": 132, "clockRate": 1980000,
    "memoryClockRate": 2619000, "memoryBusWidth": 5120,
}


def test_query_local_gpu_fake_h100(monkeypatch):
    fake_cupy(monkeypatch, props=H100_PROPS)
    local = query_local_gpu()
    assert local.name == "NVIDIA H100 80GB HBM3"
    assert local.replace(name="h100", memory_bandwidth_gbs=3350.0) == resolve_device("h100")
    assert local.memory_bandwidth_gbs == pytest.approx(3352.3, abs=0.1)
    assert resolve_device("auto") == local


def test_query_local_gpu_no_device(monkeypatch):
    fake_cupy(monkeypatch, count_error=RuntimeError("cudaErrorNoDevice: no CUDA-capable device"))
    with pytest.raises(DeviceError, match="no GPU found: .*cudaErrorNoDevice"):
        query_local_gpu()
    fake_cupy(monkeypatch, count=0)
    with pytest.raises(DeviceError, match="no GPU found"):
        query_local_gpu()


def test_query_local_gpu_bad_properties(monkeypatch):
    fake_cupy(monkeypatch, props={"name": b"odd"})
    with pytest.raises(DeviceError, match="no GPU found: cannot read the properties"):
        query_local_gpu()


# --- describe_devices -------------------------------------------------------------------------

def test_describe_devices_without_gpu(no_cupy):
    text = describe_devices()
    lines = text.splitlines()
    assert lines[0].split()[:3] == ["name", "cc", "SMs"]
    k40c = next(line for line in lines if line.startswith("k40c"))
    assert k40c.split()[:9] == ["k40c", "(default)", "3.5", "15", "16", "64", "65536", "255", "48"]
    assert "48/48" in k40c
    assert "48/227" in next(line for line in lines if line.startswith("h100"))
    assert lines[-1].startswith("local GPU: none (no GPU found: CuPy is not installed")


def test_describe_devices_with_gpu(monkeypatch):
    fake_cupy(monkeypatch, props=H100_PROPS)
    assert describe_devices().splitlines()[-1].startswith("local GPU: NVIDIA H100 80GB HBM3")
