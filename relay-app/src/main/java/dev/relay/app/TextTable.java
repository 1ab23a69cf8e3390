package dev.relay.app;

import java.io.PrintWriter;
import java.util.ArrayList;
import java.util.List;

/**
 * A plain text table: a header, rows, columns padded to their widest cell, numbers to the right.
 */
final class TextTable {
  private final List<String> header;
  private final List<List<String>> rows = new ArrayList<>();

  TextTable(String... header) {
    this.header = List.of(header);
  }

  /** Adds a row; {@code null} cells print as {@code -}. */
  TextTable row(Object... cells) {
    List<String> row = new ArrayList<>();
    for (Object cell : cells) {
      row.add(cell == null ? "-" : cell.toString());
    }
    rows.add(row);
    return this;
  }

  boolean isEmpty() {
    return rows.isEmpty();
  }

  void print(PrintWriter out) {
    int[] width = new int[header.size()];
    boolean[] numeric = new boolean[header.size()];
    boolean[] anyNumber = new boolean[header.size()];
    for (int i = 0; i < width.length; i++) {
      width[i] = header.get(i).length();
      numeric[i] = true;
    }
    for (List<String> row : rows) {
      for (int i = 0; i < width.length; i++) {
        String cell = i < row.size() ? row.get(i) : "";
        width[i] = Math.max(width[i], cell.length());
        boolean number = cell.matches("-?[0-9]+(\\.[0-9]+)?");
        anyNumber[i] |= number;
        numeric[i] &= number || cell.equals("-");
      }
    }
    for (int i = 0; i < width.length; i++) {
      numeric[i] &= anyNumber[i];
    }
    line(out, header, width, numeric);
    for (List<String> row : rows) {
      line(out, row, width, numeric);
    }
  }

  private static void line(PrintWriter out, List<String> cells, int[] width, boolean[] numeric) {
    StringBuilder sb = new StringBuilder();
    for (int i = 0; i < width.length; i++) {
      String cell = i < cells.size() ? cells.get(i) : "";
      String pad = " ".repeat(width[i] - cell.length());
      if (i > 0) {
        sb.append("  ");
      }
      sb.append(numeric[i] ? pad + cell : cell + (i == width.length - 1 ? "" : pad));
    }
    out.println(sb.toString().stripTrailing());
  }
}
