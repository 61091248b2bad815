// The geometry and prepare-time checks of lstm, gru and their gradients, and the per-element
// formulas of their cells (PADDLE_CORE_HD): what rnn_cpu.cpp and rnn_cuda.cu share.
// Conventions: manifest/rnn.pbtxt's header.
#ifndef PADDLE_OPS_NN_RNN_HPP_
#define PADDLE_OPS_NN_RNN_HPP_

#include <cmath>
#include <initializer_list>
#include <string>
#include <vector>

#include "common.hpp"

namespace paddle_ops_nn {

// What a run indexes: T steps of B sequences of I features, H hidden units, L layers of D
// directions; G gate blocks per weight and W columns (in units of H) per reserve row.
struct RnnDims {
  int64_t T = 0, B = 0, I = 0, H = 0, L = 0, D = 0;
  int64_t G = 0, W = 0;

  int64_t units() const { return L * D; }
  int64_t input_size(int64_t layer) const { return layer == 0 ? I : D * H; }
  int64_t row() const { return W * H; }  // reserve elements per (row, sequence)
  int64_t unit_size() const { return (T + 1) * B * row(); }
  // The steps a run walks: none without sequences (B == 0), however many T says (x
  // [2^40, 0, I] has 2^40 steps of nothing).
  int64_t walked_steps() const { return B > 0 ? T : 0; }
};

// The slots of the four kernels. lstm has c0 / c_n / c0_grad where gru has none, so every slot
// after them moves up by one for gru.
struct RnnSlots {
  bool cell;  // lstm
  int32_t h0() const { return 5; }
  int32_t c0() const { return 6; }
  int32_t lengths() const { return cell ? 7 : 6; }
  // outputs of the forward op
  int32_t h_n() const { return 1; }
  int32_t c_n() const { return 2; }
  int32_t reserve() const { return cell ? 3 : 2; }
  // inputs of the grad op
  int32_t grad_reserve() const { return 5; }
  int32_t grad_h0() const { return 6; }
  int32_t grad_c0() const { return 7; }
  int32_t grad_lengths() const { return cell ? 8 : 7; }
  int32_t out_grad() const { return cell ? 9 : 8; }
  int32_t h_n_grad() const { return cell ? 10 : 9; }
  int32_t c_n_grad() const { return 11; }
  // outputs of the grad op: x_grad, the four weight slots' gradients, h0_grad, c0_grad
};

inline std::string dims_text(std::initializer_list<int64_t> dims) {
  std::string s = "[";
  for (int64_t d : dims) s += (s.size() > 1 ? ", " : "") + std::to_string(d);
  return s + "]";
}

// Fail unless t has exactly `dims` and x's dtype; `what` names it ("weight_hh[1]").
inline void expect_dims(const Tensor& t, std::initializer_list<int64_t> dims, int32_t dtype,
                        const std::string& what) {
  bool same = t.ndim() == static_cast<int32_t>(dims.size()) && t.dtype() == dtype;
  int32_t k = 0;
  for (int64_t d : dims) same = same && t.dim(k++) == d;
  if (!same)
    fail("%s must be %s%s, got %s", what.c_str(), pc::dtype_name(dtype), dims_text(dims).c_str(),
         t.describe().c_str());
}

// x, the weights (slots 1 to 4) and the initial states of a forward or grad op; returns the dims.
inline RnnDims check_rnn_inputs(const Attrs& attrs, const Slots& in, bool cell, int32_t h0_slot,
                                int32_t c0_slot, int32_t lengths_slot) {
  const Tensor x = in(0);
  dispatch(x.dtype(), Floats{}, [](auto) {});
  if (x.ndim() != 3) fail("x must be time-major [T, B, I], got %s", x.describe().c_str());
  RnnDims d;
  d.T = x.dim(0), d.B = x.dim(1), d.I = x.dim(2);
  d.H = attrs.i("hidden_size"), d.L = attrs.i("num_layers"), d.D = attrs.b("bidirectional") ? 2 : 1;
  d.G = cell ? 4 : 3, d.W = cell ? 6 : 5;
  if (d.H < 1 || d.L < 1) fail("hidden_size and num_layers must be at least 1");
  const char* names[] = {"weight_ih", "weight_hh", "bias_ih", "bias_hh"};
  for (int32_t slot = 1; slot <= 4; ++slot) {
    if (in.size(slot) != d.units())
      fail("%s holds %d tensor(s), but num_layers x directions is %lld", names[slot - 1],
           static_cast<int>(in.size(slot)), static_cast<long long>(d.units()));
    for (int32_t k = 0; k < d.units(); ++k) {
      const std::string what = std::string(names[slot - 1]) + "[" + std::to_string(k) + "]";
      const int64_t rows = d.G * d.H;
      if (slot == 1) expect_dims(in(slot, k), {rows, d.input_size(k / d.D)}, x.dtype(), what);
      if (slot == 2) expect_dims(in(slot, k), {rows, d.H}, x.dtype(), what);
      if (slot >= 3) expect_dims(in(slot, k), {rows}, x.dtype(), what);
    }
  }
  if (in.has(h0_slot)) expect_dims(in(h0_slot), {d.units(), d.B, d.H}, x.dtype(), "h0");
  if (cell && in.has(c0_slot)) expect_dims(in(c0_slot), {d.units(), d.B, d.H}, x.dtype(), "c0");
  if (in.has(lengths_slot)) {
    const Tensor lengths = in(lengths_slot);
    if (lengths.dtype() != PC_INT32 && lengths.dtype() != PC_INT64)
      fail("sequence_length must be int32 or int64, got %s", lengths.describe().c_str());
    if (lengths.ndim() != 1 || lengths.dim(0) != d.B)
      fail("sequence_length must be [%lld], got %s", static_cast<long long>(d.B),
           lengths.describe().c_str());
  }
  // OpenBLAS and cuBLAS take 32-bit sizes: rows of every step (T * B) and of a reserve row.
  if (d.T * d.B > INT32_MAX || d.G * d.H > INT32_MAX || d.row() > INT32_MAX ||
      d.input_size(0) > INT32_MAX || d.D * d.H > INT32_MAX)
    fail("the network is too large for the 32-bit sizes of OpenBLAS and cuBLAS");
  return d;
}

// The prepare checks of the forward kernels (CPU and CUDA): the inputs, then out, h_n, c_n
// (lstm) and reserve; returns the dims.
inline RnnDims check_rnn(const Attrs& attrs, const Slots& in, const Slots& out, bool cell) {
  const RnnSlots s{cell};
  const RnnDims d = check_rnn_inputs(attrs, in, cell, s.h0(), s.c0(), s.lengths());
  const int32_t dtype = in(0).dtype();
  expect_dims(out(0), {d.T, d.B, d.D * d.H}, dtype, "out");
  expect_dims(out(s.h_n()), {d.units(), d.B, d.H}, dtype, "h_n");
  if (cell) expect_dims(out(s.c_n()), {d.units(), d.B, d.H}, dtype, "c_n");
  expect_dims(out(s.reserve()), {d.units(), d.T + 1, d.B, d.row()}, dtype, "reserve");
  return d;
}

// The prepare checks of the grad kernels (CPU and CUDA): the forward's inputs, reserve, the
// outputs' gradients that are given, and every gradient asked for; returns the dims.
inline RnnDims check_rnn_grad(const Attrs& attrs, const Slots& in, const Slots& out, bool cell) {
  const RnnSlots s{cell};
  const RnnDims d = check_rnn_inputs(attrs, in, cell, s.grad_h0(), s.grad_c0(), s.grad_lengths());
  const int32_t dtype = in(0).dtype();
  expect_dims(in(s.grad_reserve()), {d.units(), d.T + 1, d.B, d.row()}, dtype, "reserve");
  if (in.has(s.out_grad()))
    expect_dims(in(s.out_grad()), {d.T, d.B, d.D * d.H}, dtype, "out_grad");
  if (in.has(s.h_n_grad()))
    expect_dims(in(s.h_n_grad()), {d.units(), d.B, d.H}, dtype, "h_n_grad");
  if (cell && in.has(s.c_n_grad()))
    expect_dims(in(s.c_n_grad()), {d.units(), d.B, d.H}, dtype, "c_n_grad");
  if (out.has(0)) expect_dims(out(0), {d.T, d.B, d.I}, dtype, "x_grad");
  const char* names[] = {"weight_ih_grad", "weight_hh_grad", "bias_ih_grad", "bias_hh_grad"};
  for (int32_t slot = 1; slot <= 4; ++slot) {
    if (!out.has(slot)) continue;
    if (out.size(slot) != d.units())
      fail("%s holds %d tensor(s), but there are %lld weights", names[slot - 1],
           static_cast<int>(out.size(slot)), static_cast<long long>(d.units()));
    for (int32_t k = 0; k < d.units(); ++k) {
      expect_same_shape(in(slot, k), out(slot, k), names[slot - 1]);
      expect_same_dtype(in(slot, k), out(slot, k), names[slot - 1]);
    }
  }
  if (out.has(5)) expect_dims(out(5), {d.units(), d.B, d.H}, dtype, "h0_grad");
  if (cell && out.has(6)) expect_dims(out(6), {d.units(), d.B, d.H}, dtype, "c0_grad");
  return d;
}

// sequence_length[b], n, checked against [1, T] (both devices check every value on the host
// before anything is computed).
inline int64_t checked_length(int64_t n, int64_t b, int64_t T) {
  if (n < 1 || n > T)
    fail("sequence_length[%lld] is %lld, outside [1, %lld] (T, the steps of x)",
         static_cast<long long>(b), static_cast<long long>(n), static_cast<long long>(T));
  return n;
}

// -- where a run keeps its steps (host code of both devices) ---------------------------------

// Where one layer-direction unit keeps its steps in the reserve. Step t's gates are in row t;
// the state it reads is in row prev(t) and the one it makes in row next(t).
template <class T>
struct Unit {
  const RnnDims& d;
  int64_t index;  // l * D + direction
  bool reverse;
  T* base;  // the unit's [T + 1, B, W * H] block of the reserve

  int64_t time(int64_t step) const { return reverse ? d.T - 1 - step : step; }
  int64_t prev(int64_t t) const { return reverse ? t + 1 : t; }
  int64_t next(int64_t t) const { return reverse ? t : t + 1; }
  int64_t initial() const { return reverse ? d.T : 0; }
  int64_t last() const { return reverse ? 0 : d.T; }
  T* at(int64_t row, int64_t b) const { return base + (row * d.B + b) * d.row(); }
  T* h(int64_t row, int64_t b) const { return at(row, b) + 4 * d.H; }
  T* c(int64_t row, int64_t b) const { return at(row, b) + 5 * d.H; }
};

template <class T>
Unit<T> unit_of(const RnnDims& d, T* reserve, int64_t l, int64_t dir) {
  const int64_t u = l * d.D + dir;
  return Unit<T>{d, u, dir == 1, reserve + u * d.unit_size()};
}

// A column block of a layer's input, [T * B, cols] with row stride ld: x for layer 0; each
// direction's hidden states (in the reserve) above it. offset: its first column in weight_ih.
template <class T>
struct Piece {
  const T* data;
  int64_t ld, cols, offset;
};

template <class T>
std::vector<Piece<T>> layer_input(const RnnDims& d, const T* x, const T* reserve, int64_t l) {
  if (l == 0) return {Piece<T>{x, d.I, d.I, 0}};
  std::vector<Piece<T>> pieces;
  for (int64_t dir = 0; dir < d.D; ++dir) {
    const Unit<T> below = unit_of(d, const_cast<T*>(reserve), l - 1, dir);
    // next(t) rises with t in both directions: the rows of steps 0 .. T - 1 are contiguous.
    pieces.push_back(Piece<T>{below.h(below.next(0), 0), d.row(), d.H, dir * d.H});
  }
  return pieces;
}

// Tensor k of a duplicable slot (a unit's weight), as T*.
template <class T>
T* item(const Slots& s, int32_t slot, int64_t k) {
  return s(slot, static_cast<int32_t>(k)).data<T>();
}

// The zero state where an initial or final state's tensor is absent.
template <class T>
const T* state_or_null(const Slots& s, int32_t slot, int64_t u, const RnnDims& d) {
  return s.has(slot) ? s(slot).data<T>() + u * d.B * d.H : nullptr;
}

// -- the cells, one sequence's H units at a time -----------------------------------------------

template <class T>
PADDLE_CORE_HD T sigmoid(T v) {
  return T(1) / (T(1) + std::exp(-v));
}

// lstm, forward: gates holds W_ih x + b_ih (4H) and becomes i, f, g, o; hproj is W_hh h.
template <class T>
PADDLE_CORE_HD void lstm_cell(int64_t j, int64_t H, T* gates, const T* hproj, const T* b_hh,
                              const T* c_prev, T* h, T* c) {
  const T i = sigmoid(gates[j] + hproj[j] + b_hh[j]);
  const T f = sigmoid(gates[H + j] + hproj[H + j] + b_hh[H + j]);
  const T g = std::tanh(gates[2 * H + j] + hproj[2 * H + j] + b_hh[2 * H + j]);
  const T o = sigmoid(gates[3 * H + j] + hproj[3 * H + j] + b_hh[3 * H + j]);
  gates[j] = i, gates[H + j] = f, gates[2 * H + j] = g, gates[3 * H + j] = o;
  c[j] = f * c_prev[j] + i * g;
  h[j] = o * std::tanh(c[j]);
}

// lstm, backward: from dh (flowing into h) and dc (into c), the gradients of the four gates'
// pre-activations; dc becomes the gradient of c_prev.
template <class T>
PADDLE_CORE_HD void lstm_cell_grad(int64_t j, int64_t H, const T* gates, const T* c_prev,
                                   const T* c, T dh, T* dc, T* dgates) {
  const T i = gates[j], f = gates[H + j], g = gates[2 * H + j], o = gates[3 * H + j];
  const T tc = std::tanh(c[j]);
  const T dcell = dc[j] + dh * o * (T(1) - tc * tc);
  dgates[j] = dcell * g * i * (T(1) - i);
  dgates[H + j] = dcell * c_prev[j] * f * (T(1) - f);
  dgates[2 * H + j] = dcell * i * (T(1) - g * g);
  dgates[3 * H + j] = dh * tc * o * (T(1) - o);
  dc[j] = dcell * f;
}

// gru, forward: gates holds W_ih x + b_ih (3H) and becomes r, z, n and then W_hn h + b_hn;
// hproj is W_hh h.
template <class T>
PADDLE_CORE_HD void gru_cell(int64_t j, int64_t H, T* gates, const T* hproj, const T* b_hh,
                             const T* h_prev, T* h) {
  const T r = sigmoid(gates[j] + hproj[j] + b_hh[j]);
  const T z = sigmoid(gates[H + j] + hproj[H + j] + b_hh[H + j]);
  const T hn = hproj[2 * H + j] + b_hh[2 * H + j];
  const T n = std::tanh(gates[2 * H + j] + r * hn);
  gates[j] = r, gates[H + j] = z, gates[2 * H + j] = n, gates[3 * H + j] = hn;
  h[j] = (T(1) - z) * n + z * h_prev[j];
}

// gru, backward: from dh (flowing into h), the gradients of the pre-activations on the input
// side (dgx: r, z, n) and the hidden side (dgh: r, z, W_hn h + b_hn); returns the part of
// h_prev's gradient that does not go through W_hh.
template <class T>
PADDLE_CORE_HD T gru_cell_grad(int64_t j, int64_t H, const T* gates, const T* h_prev, T dh, T* dgx,
                               T* dgh) {
  const T r = gates[j], z = gates[H + j], n = gates[2 * H + j], hn = gates[3 * H + j];
  const T dn = dh * (T(1) - z) * (T(1) - n * n);
  const T dr = dn * hn * r * (T(1) - r);
  const T dz = dh * (h_prev[j] - n) * z * (T(1) - z);
  dgx[j] = dgh[j] = dr;
  dgx[H + j] = dgh[H + j] = dz;
  dgx[2 * H + j] = dn;
  dgh[2 * H + j] = dn * r;
  return dh * z;
}

}  // namespace paddle_ops_nn

#endif  // PADDLE_OPS_NN_RNN_HPP_
