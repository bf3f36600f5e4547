// Native Verilator testbench of vta_top: the DRAM (cocotbext-axi's AxiRam, cycle for cycle) and the
// AXI4-Lite host in C++, called from Python through ctypes (hw/native/__init__.py).
//
// One call runs one program on a fresh model (SRAMs and registers start from zero, as vta_sim
// starts every run): reset, INSN_ADDR / INSN_COUNT / CTRL.START over AXI4-Lite, wait for DONE,
// read back every register, copy DRAM out.
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <deque>
#include <memory>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "Vvta_top.h"
#include "verilated.h"

#if !defined(VTA_BUS_BYTES) || !defined(VTA_REG_CTRL) || !defined(VTA_STATUS_DONE)
#error "build through hw/native: it defines the bus width and the registers from vta_sim"
#endif

namespace {

constexpr unsigned kBus = VTA_BUS_BYTES;
// AxiRam's channels hold at most two transfers (queue_occupancy_limit = 2 in cocotbext-axi).
constexpr size_t kQueueLimit = 2;
constexpr unsigned kRespOkay = 0, kRespSlvErr = 2;
// Registers of spec section 8 the host drives, and the status bits (vta_sim.registers).
constexpr uint32_t kRegCtrl = VTA_REG_CTRL, kRegInsnCount = VTA_REG_INSN_COUNT, kRegInsnAddr = VTA_REG_INSN_ADDR;
constexpr uint32_t kCtrlStart = VTA_CTRL_START, kStatusDone = VTA_STATUS_DONE, kStatusError = VTA_STATUS_ERROR;
// As the cocotb bench: reset cycles, the AXI drain after an error, and how long a register
// access may take before the host gives up.
constexpr int kResetCycles = 4, kAfterReset = 2, kErrorDrain = 300, kRegTimeout = 1000;
// DONE is polled over AXI4-Lite every this many cycles (CYCLES is latched by the device itself).
constexpr uint64_t kPollEvery = 256;

// Verilator holds buses up to 64 bits in an integer and wider ones in a VlWide of 32-bit words,
// least significant first; both are little-endian byte images on the hosts we build for.
template <typename T>
void put_bytes(T& sig, const uint8_t* src) {
    if constexpr (std::is_arithmetic_v<T>) {
        T v = 0;
        std::memcpy(&v, src, kBus);
        sig = v;
    } else {
        std::memcpy(sig.data(), src, kBus);
    }
}

template <typename T>
void get_bytes(const T& sig, uint8_t* dst) {
    if constexpr (std::is_arithmetic_v<T>) {
        std::memcpy(dst, &sig, kBus);
    } else {
        std::memcpy(dst, sig.data(), kBus);
    }
}

template <typename T>
bool bit_of(const T& sig, unsigned i) {
    if constexpr (std::is_arithmetic_v<T>) {
        return (static_cast<uint64_t>(sig) >> i) & 1;
    } else {
        return (sig[i / 32] >> (i % 32)) & 1;
    }
}

struct Burst {
    uint64_t addr;
    unsigned beats, size_bytes, done = 0;
};

struct Beat {
    uint8_t data[kBus];
    unsigned resp = kRespOkay;
    bool last = false;
    bool strb[kBus];  // write beats only
};

// What the DUT presented in the cycle before a rising edge: the transfers that edge completes.
struct Sample {
    bool ar, r, aw, w, b;
    Burst ar_burst, aw_burst;
    Beat w_beat;
};

// AxiRam, transcribed from cocotbext-axi 0.1.28 (stream.py, axi_slave.py) as the cocotb bench runs
// it on Verilator: at each rising edge the sinks take the transfer of the cycle before and set
// READY = (queued < 2), the sources move on after a transfer (or when idle) to the next queued
// item, then process_read/process_write move bursts into the R queue and out of the W queue.
// An item queued at an edge reaches the bus at the next edge, so a read's first beat comes two
// cycles after its AR and a write's B two cycles after its last W beat.
class Dram {
   public:
    Dram(uint8_t* mem, size_t size) : mem_(mem), size_(size) {}

    static Sample sample(const Vvta_top& t) {
        Sample s{};
        s.ar = t.m_axi_arvalid && t.m_axi_arready;
        s.r = t.m_axi_rvalid && t.m_axi_rready;
        s.aw = t.m_axi_awvalid && t.m_axi_awready;
        s.w = t.m_axi_wvalid && t.m_axi_wready;
        s.b = t.m_axi_bvalid && t.m_axi_bready;
        if (s.ar) s.ar_burst = {t.m_axi_araddr, t.m_axi_arlen + 1u, 1u << t.m_axi_arsize};
        if (s.aw) s.aw_burst = {t.m_axi_awaddr, t.m_axi_awlen + 1u, 1u << t.m_axi_awsize};
        if (s.w) {
            get_bytes(t.m_axi_wdata, s.w_beat.data);
            for (unsigned i = 0; i < kBus; ++i) s.w_beat.strb[i] = bit_of(t.m_axi_wstrb, i);
            s.w_beat.last = t.m_axi_wlast;
        }
        return s;
    }

    // After the rising edge: drive the DRAM's inputs for the cycle that starts.
    void edge(const Sample& s, Vvta_top& t) {
        if (s.ar) ar_q_.push_back(s.ar_burst);
        t.m_axi_arready = ar_q_.size() < kQueueLimit;
        if (s.r || !t.m_axi_rvalid) {
            t.m_axi_rvalid = !r_q_.empty();
            if (!r_q_.empty()) {
                const Beat& beat = r_q_.front();
                put_bytes(t.m_axi_rdata, beat.data);
                t.m_axi_rlast = beat.last;
                t.m_axi_rresp = beat.resp;
                r_q_.pop_front();
            }
        }
        process_read();

        if (s.aw) aw_q_.push_back(s.aw_burst);
        t.m_axi_awready = aw_q_.size() < kQueueLimit;
        if (s.w) w_q_.push_back(s.w_beat);
        t.m_axi_wready = w_q_.size() < kQueueLimit;
        if (s.b || !t.m_axi_bvalid) {
            t.m_axi_bvalid = !b_q_.empty();
            if (!b_q_.empty()) {
                t.m_axi_bresp = b_q_.front();
                b_q_.pop_front();
            }
        }
        process_write();
    }

   private:
    // AxiRam reads and writes whole bus words at the beat's aligned address (INCR bursts).
    uint64_t word_addr(const Burst& b) const {
        return ((b.addr & ~uint64_t(b.size_bytes - 1)) + uint64_t(b.done) * b.size_bytes) & ~uint64_t(kBus - 1);
    }

    void process_read() {
        while (true) {
            if (!reading_) {
                if (ar_q_.empty()) return;
                rd_ = ar_q_.front();
                ar_q_.pop_front();
                reading_ = true;
            }
            while (rd_.done < rd_.beats && r_q_.size() < kQueueLimit) {
                Beat beat{};
                const uint64_t at = word_addr(rd_);
                if (at + kBus <= size_) {
                    std::memcpy(beat.data, mem_ + at, kBus);
                } else {
                    beat.resp = kRespSlvErr;  // data zero, as AxiRam answers a failed read
                }
                beat.last = ++rd_.done == rd_.beats;
                r_q_.push_back(beat);
            }
            if (rd_.done < rd_.beats) return;
            reading_ = false;
        }
    }

    void process_write() {
        while (true) {
            if (!writing_) {
                if (aw_q_.empty()) return;
                wr_ = aw_q_.front();
                aw_q_.pop_front();
                writing_ = true;
                wr_resp_ = kRespOkay;
            }
            while (wr_.done < wr_.beats && !w_q_.empty()) {
                const Beat& beat = w_q_.front();
                const uint64_t at = word_addr(wr_);
                for (unsigned i = 0; i < kBus; ++i) {
                    if (!beat.strb[i]) continue;
                    if (at + i < size_) {
                        mem_[at + i] = beat.data[i];
                    } else {
                        wr_resp_ = kRespSlvErr;
                    }
                }
                w_q_.pop_front();
                ++wr_.done;
            }
            if (wr_.done < wr_.beats || b_q_.size() >= kQueueLimit) return;
            b_q_.push_back(wr_resp_);
            writing_ = false;
        }
    }

    uint8_t* mem_;
    size_t size_;
    std::deque<Burst> ar_q_, aw_q_;
    std::deque<Beat> r_q_, w_q_;
    std::deque<unsigned> b_q_;
    Burst rd_{}, wr_{};
    bool reading_ = false, writing_ = false;
    unsigned wr_resp_ = kRespOkay;
};

class Bench {
   public:
    Bench(uint8_t* mem, size_t size) : top_(new Vvta_top{&ctx_}), dram_(mem, size) {
        top_->clk = 0;
        top_->rst = 1;
        top_->eval();
    }
    ~Bench() { top_->final(); }

    uint64_t cycles_run() const { return cycle_; }

    // One clock cycle; `host` changes the host's inputs after the edge (it gets whether the
    // edge completed each AXI4-Lite transfer).
    template <typename Host>
    void tick(Host&& host) {
        Vvta_top& t = *top_;
        const Sample s = Dram::sample(t);
        const bool aw = t.s_axil_awvalid && t.s_axil_awready, w = t.s_axil_wvalid && t.s_axil_wready;
        const bool b = t.s_axil_bvalid && t.s_axil_bready, ar = t.s_axil_arvalid && t.s_axil_arready;
        const bool r = t.s_axil_rvalid && t.s_axil_rready;
        const uint32_t rdata = t.s_axil_rdata;
        t.clk = 1;
        t.eval();
        dram_.edge(s, t);
        host(aw, w, b, ar, r, rdata);
        t.clk = 0;
        t.eval();
        ++cycle_;
    }

    void idle(uint64_t n) {
        for (uint64_t i = 0; i < n; ++i) tick([](bool, bool, bool, bool, bool, uint32_t) {});
    }

    void reset() {
        top_->rst = 1;
        idle(kResetCycles);
        top_->rst = 0;
        top_->eval();
        idle(kAfterReset);
    }

    void write_reg(uint32_t addr, uint32_t data) {
        Vvta_top& t = *top_;
        t.s_axil_awaddr = addr;
        t.s_axil_awvalid = 1;
        t.s_axil_wdata = data;
        t.s_axil_wstrb = 0xF;
        t.s_axil_wvalid = 1;
        t.s_axil_bready = 1;
        t.eval();  // READY may follow VALID combinationally: settle before tick() samples it
        bool responded = false;
        for (int n = 0; !responded; ++n) {
            if (n == kRegTimeout) {
                throw std::runtime_error("no AXI4-Lite write response for register " + std::to_string(addr));
            }
            tick([&](bool aw, bool w, bool b, bool, bool, uint32_t) {
                if (aw) t.s_axil_awvalid = 0;
                if (w) t.s_axil_wvalid = 0;
                if (b) t.s_axil_bready = 0, responded = true;
            });
        }
    }

    uint32_t read_reg(uint32_t addr) {
        Vvta_top& t = *top_;
        t.s_axil_araddr = addr;
        t.s_axil_arvalid = 1;
        t.s_axil_rready = 1;
        t.eval();
        bool responded = false;
        uint32_t value = 0;
        for (int n = 0; !responded; ++n) {
            if (n == kRegTimeout) {
                throw std::runtime_error("no AXI4-Lite read data for register " + std::to_string(addr));
            }
            tick([&](bool, bool, bool, bool ar, bool r, uint32_t rdata) {
                if (ar) t.s_axil_arvalid = 0;
                if (r) t.s_axil_rready = 0, responded = true, value = rdata;
            });
        }
        return value;
    }

   private:
    VerilatedContext ctx_;
    std::unique_ptr<Vvta_top> top_;
    Dram dram_;
    uint64_t cycle_ = 0;
};

}  // namespace

extern "C" {

// Runs one program on `mem` (size bytes, updated in place). Reads registers 0 .. nregs-1 (byte
// offsets 4 i) into regs after DONE. Returns 0 when the device reported DONE, 1 when it did not
// within timeout_cycles (the CTRL word of regs then holds the last status), -1 on a bench failure
// (message in err). *cycles_run: clock cycles simulated in all, host accesses included.
int vta_native_run(uint8_t* mem, uint64_t size, uint32_t insn_addr, uint32_t insn_count,
                   uint64_t timeout_cycles, uint32_t* regs, uint32_t nregs, uint64_t* cycles_run,
                   char* err, uint64_t err_size) {
    try {
        Bench bench(mem, size);
        bench.reset();
        bench.write_reg(kRegInsnAddr, insn_addr);
        bench.write_reg(kRegInsnCount, insn_count);
        bench.write_reg(kRegCtrl, kCtrlStart);
        const uint64_t started = bench.cycles_run();
        uint32_t status = 0;
        while (!(status & kStatusDone) && bench.cycles_run() - started < timeout_cycles) {
            bench.idle(kPollEvery);
            status = bench.read_reg(kRegCtrl);
        }
        int rc = 0;
        if (!(status & kStatusDone)) {
            rc = 1;
            regs[kRegCtrl / 4] = status;
        } else {
            if (status & kStatusError) bench.idle(kErrorDrain);  // let the halted run's AXI traffic land
            for (uint32_t i = 0; i < nregs; ++i) regs[i] = bench.read_reg(4 * i);
        }
        *cycles_run = bench.cycles_run();
        return rc;
    } catch (const std::exception& exc) {
        std::snprintf(err, err_size, "%s", exc.what());
        return -1;
    }
}
}
